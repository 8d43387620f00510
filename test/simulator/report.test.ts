import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scenarioCharts, worstWindowChart } from '../../packages/simulator/src/report/charts.js';
import { renderPage } from '../../packages/simulator/src/report/page.js';
import { runScenario, type ScenarioResult } from '../../packages/simulator/src/report/run-scenario.js';
import { scenarios } from '../../packages/simulator/src/report/scenarios.js';

let dir: string;
let result: ScenarioResult;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sluice-simulate-'));
  // A boundary attack on 5 per 10 s, written as a user's plain trace: 5 just before 10 s, 5 just after.
  const lines = ['# replayed through --trace', ...[9_900, 9_920, 9_940, 9_960, 9_980].map((t) => `${t} attacker`)];
  lines.push(...[10_000, 10_020, 10_040, 10_060, 10_080].map((t) => `${t} attacker`), '10500 bystander 2');
  const path = join(dir, 'trace.txt');
  await writeFile(path, `${lines.join('\n')}\n`);
  const recorded = scenarios({ path, limit: 5, windowMs: 10_000 }).find((s) => s.id === 'recorded-trace');
  result = await runScenario(recorded as NonNullable<typeof recorded>);
});

afterAll(() => rm(dir, { recursive: true, force: true }));

describe('the simulate report', () => {
  it('refuses a trace with no requests instead of drawing empty charts', async () => {
    const path = join(dir, 'empty.txt');
    await writeFile(path, '# nothing yet\n');
    const recorded = scenarios({ path, limit: 5, windowMs: 10_000 }).find((s) => s.id === 'recorded-trace');
    await expect(runScenario(recorded as NonNullable<typeof recorded>)).rejects.toMatchObject({
      code: 'ERR_SLUICE_INVALID_TRAFFIC',
    });
  });

  it('replays a trace given with --trace through every algorithm', () => {
    expect(result).toMatchObject({ requests: 11, clients: 2, busiestKey: 'attacker' });
    const worst = Object.fromEntries(result.runs.map((r) => [r.name, r.worst.admitted]));
    expect(worst).toMatchObject({ 'fixed-window': 10, 'sliding-window-log': 5 });
  });

  it('draws the charts the scenario asks for, identical lines once under a joined name', () => {
    const charts = scenarioCharts(result);
    expect(charts.map((c) => c.file)).toEqual(['recorded-trace-admitted.svg', 'recorded-trace-window.svg']);
    for (const chart of charts) {
      expect(chart.svg).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"[^>]*>\n<title>/);
      expect(chart.svg.trimEnd().endsWith('</svg>')).toBe(true);
    }
    // Only fixed windows let the second half of the attack through; every other line is the same.
    const legend = [...(charts[0]?.svg ?? '').matchAll(/fill="#111111">([^<]*)<\/text>/g)].map((m) => m[1]);
    expect(legend).toEqual([
      'Recorded trace: offered vs admitted',
      'offered',
      'fixed-window',
      'sliding-window-log = sliding-window-counter = token-bucket = leaky-bucket = gcra',
      'time since start (s)',
    ]);
    expect(charts[1]?.svg).toContain('>limit 5</text>');
  });

  it('writes a page that embeds every chart and gives the figures', () => {
    const charts = scenarioCharts(result);
    const summary = worstWindowChart([result]);
    const page = renderPage([result], summary, new Map([[result, charts]]));
    for (const chart of [summary, ...charts]) expect(page).toContain(`](${chart.file})`);
    // admitted, refused, refused %, clients refused, worst window
    expect(page).toMatch(/\| `fixed-window` +\| +11 \| +0 \| +0 % \| +0 \| +10 \(2×\) \|/);
    expect(page).toMatch(/\| `sliding-window-log` +\| +6 \| +5 \| +45\.45 % \| +1 \| +5 \(1×\) \|/);
    expect(page).toContain('## The sliding window counter against the exact log');
  });
});
