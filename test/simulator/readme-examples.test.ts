import { fileURLToPath } from 'node:url';
import { boundaryAttack, readTrace, simulate, worstWindow } from '@sluice/simulator';
import { describe, expect, it } from 'vitest';

const sample = fileURLToPath(new URL('../../packages/simulator/traces/sample-access.log', import.meta.url));

// The figures packages/simulator/README.md quotes.
describe('the simulator README examples', () => {
  it('the boundary attack: 200 through fixed windows, 100 through the log, 109 through gcra', async () => {
    const traffic = boundaryAttack({ limit: 100, window: '1m' });
    const worst: Record<string, number> = {};
    for (const algorithm of ['fixed-window', 'sliding-window-log', 'gcra'] as const) {
      const { decisions } = await simulate(traffic, { limit: 100, window: '1m', algorithm });
      worst[algorithm] = worstWindow(decisions, 100, 60_000).admitted;
    }
    expect(worst).toEqual({ 'fixed-window': 200, 'sliding-window-log': 100, gcra: 109 });
  });

  it('the sample access log: 60 per minute with gcra refuses the scraper and nobody else', async () => {
    const { decisions } = await simulate(await readTrace(sample), { limit: 60, window: '1m', algorithm: 'gcra' });
    const refused = new Set(decisions.filter((d) => !d.allowed).map((d) => d.key));
    expect([...refused]).toEqual(['198.51.100.250']);
  });
});
