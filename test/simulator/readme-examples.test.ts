import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  boundaryAttack,
  bursts,
  diurnal,
  heavyTailed,
  readTrace,
  simulate,
  steady,
  worstWindow,
} from '@sluice/simulator';
import { describe, expect, it } from 'vitest';

const sample = fileURLToPath(new URL('../../packages/simulator/traces/sample-access.log', import.meta.url));
const readme = readFileSync(new URL('../../packages/simulator/README.md', import.meta.url), 'utf8');
const trafficSection = readme.slice(readme.indexOf('## Traffic'), readme.indexOf('## Measures'));

/** The code `make` throws, or `undefined` when it throws nothing. */
function codeOf(make: () => unknown): string | undefined {
  try {
    make();
    return undefined;
  } catch (error) {
    return (error as { code?: string }).code;
  }
}

/** Each generator on valid options, plus `extra`. */
const generators: Record<string, (extra: object) => unknown> = {
  steady: (extra) => steady({ ratePerSecond: 1, duration: '1s', ...extra }),
  bursts: (extra) => bursts({ baseRatePerSecond: 1, burstSize: 2, burstEvery: '1s', duration: '2s', ...extra }),
  boundaryAttack: (extra) => boundaryAttack({ limit: 2, window: '1s', ...extra }),
  heavyTailed: (extra) => heavyTailed({ clients: 2, ratePerSecond: 1, duration: '1s', ...extra }),
  diurnal: (extra) => diurnal({ clients: 2, meanRatePerSecond: 0.001, ...extra }),
};

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

describe('the simulator README on traffic options', () => {
  it('names the generators that take no seed (it said every one is seeded; boundaryAttack refuses one)', () => {
    const unseeded = Object.keys(generators).filter((name) => codeOf(() => generators[name]?.({ seed: 2 })));
    expect(unseeded.length).toBeGreaterThan(0);
    for (const name of unseeded) expect(trafficSection).toMatch(new RegExp(`\`${name}\`[^.]* takes no \`seed\``));
    expect(trafficSection).not.toMatch(/Every generator is seeded/);
  });

  it('names every code a bad option throws (a bad duration throws ERR_SLUICE_INVALID_DURATION, not the one it gave)', () => {
    const codes = new Set<string | undefined>();
    for (const make of Object.values(generators)) {
      codes.add(codeOf(() => make({ duration: '1 minute' })));
      codes.add(codeOf(() => make({ startMs: -1 })));
    }
    codes.add(codeOf(() => boundaryAttack({ limit: 2, window: 'soon' as '1s' })));
    codes.delete(undefined);
    expect(codes.size).toBeGreaterThan(1);
    for (const code of codes) expect(trafficSection).toContain(`\`${code}\``);
  });
});
