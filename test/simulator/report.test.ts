import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lineChart } from '../../packages/simulator/src/chart/line-chart.js';
import { textWidth } from '../../packages/simulator/src/chart/svg.js';
import { scenarioCharts, worstWindowChart } from '../../packages/simulator/src/report/charts.js';
import { renderPage } from '../../packages/simulator/src/report/page.js';
import { runScenario, type ScenarioResult, scenarioDone } from '../../packages/simulator/src/report/run-scenario.js';
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

const range = (from: number, count: number, step: number) => Array.from({ length: count }, (_, i) => from + i * step);

/** The recorded-trace scenario on `lines`, written to a file as `--trace` would name it. */
async function replay(name: string, lines: readonly string[], windowMs = 10_000): Promise<ScenarioResult> {
  const path = join(dir, name);
  await writeFile(path, `${lines.join('\n')}\n`);
  const recorded = scenarios({ path, limit: 5, windowMs }).find((s) => s.id === 'recorded-trace');
  return runScenario(recorded as NonNullable<typeof recorded>);
}

/** The tick labels of a line chart's time axis (`x`) or value axis (`y`), in order. */
const tickLabels = (svg: string | undefined, axis: 'x' | 'y') =>
  [
    ...(svg ?? '').matchAll(
      new RegExp(`text-anchor="${axis === 'x' ? 'middle' : 'end'}" fill="#333333">([^<]*)<`, 'g'),
    ),
  ].map((m) => m[1]);

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
      'time since start (ms)',
    ]);
    expect(charts[1]?.svg).toContain('>limit 5</text>');
  });

  it('writes a page that embeds every chart and gives the figures', () => {
    const charts = scenarioCharts(result);
    const summary = worstWindowChart([result]);
    const page = renderPage([result], summary, new Map([[result, charts]]));
    for (const chart of [summary, ...charts]) expect(page).toContain(`](${chart.file})`);
    // admitted, refused, refused %, clients refused, worst window: in cost units, as the bystander's request costs 2
    expect(page).toMatch(/\| `fixed-window` +\| +12 \| +0 \| +0 % \| +0 \| +10 \(2×\) \|/);
    expect(page).toMatch(/\| `sliding-window-log` +\| +7 \| +5 \| +41\.67 % \| +1 \| +5 \(1×\) \|/);
    expect(page).toContain('## The sliding window counter against the exact log');
  });

  // A window or bucket of days was named in hours ("in the last 24 h", "the most per 48 h").
  it('names a window and a bucket of whole days in days', async () => {
    const days = await replay(
      'days.txt',
      range(0, 400, 86_400_000).map((t) => `${t} a`),
      86_400_000,
    );
    const [admitted, window] = scenarioCharts(days);
    expect(window?.svg).toContain('>requests in the last 1 d</text>');
    expect(window?.svg).toMatch(/the most per \d+ d;/);
    expect(`${admitted?.svg}${window?.svg}`).not.toMatch(/\d h\b/);
  });

  it('counts and labels cost units where a request costs more than 1 (a "requests" axis and column counted cost)', async () => {
    // Five requests of cost 2 against 5 per 10 s: two pass (4 units), three are refused (6 units).
    const costly = await replay(
      'costly.txt',
      range(1_000, 5, 1_000).map((t) => `${t} a 2`),
    );
    const charts = scenarioCharts(costly);
    const [admitted, window] = charts;
    const log = costly.runs.find((run) => run.name === 'sliding-window-log');
    expect(log?.totals).toMatchObject({ admitted: 2, refused: 3, admittedCost: 4, refusedCost: 6, offeredCost: 10 });
    expect(admitted?.svg).toContain('5 requests (10 cost units) from 1 client');
    expect(admitted?.svg).toContain('>cost units per second</text>');
    expect(window?.svg).toContain('>cost units in the last 10 s</text>');
    const page = renderPage([costly], worstWindowChart([costly]), new Map([[costly, charts]]));
    expect(page).toContain(
      '| admitted, cost units | refused, cost units | refused % | worst 10 s, cost units (÷ limit) |',
    );
    expect(page).toMatch(/\| `sliding-window-log` +\| +4 \| +6 \| +60 % \| +4 \(0\.8×\) \|/);
    expect(page).not.toMatch(/requests (per second|admitted in the last)/);
    // Where every request costs 1, requests they stay.
    const plain = await replay(
      'plain.txt',
      range(1_000, 5, 1_000).map((t) => `${t} a`),
    );
    const plainCharts = scenarioCharts(plain);
    expect(plainCharts[0]?.svg).toContain('>requests per second</text>');
    expect(plainCharts[1]?.svg).toContain('>requests in the last 10 s</text>');
    const plainPage = renderPage([plain], worstWindowChart([plain]), new Map([[plain, plainCharts]]));
    expect(plainPage).toContain('| admitted | refused | refused % | worst 10 s (÷ limit) |');
    expect(plainPage).not.toContain('cost units');
  });

  it('quotes a trace path holding backticks in a code span of its own (a backtick ended the span early)', () => {
    const about = (path: string) =>
      scenarios({ path, limit: 5, windowMs: 10_000 }).find((s) => s.id === 'recorded-trace')?.about;
    expect(about('/logs/a`b``c.log')).toBe('Replayed from ```/logs/a`b``c.log```, keyed by client.');
    // A backtick at either end is padded, as CommonMark strips one space from each side.
    expect(about('`x')).toBe('Replayed from `` `x ``, keyed by client.');
    // A line break would end the paragraph and let the rest of the path start a heading.
    expect(about('/logs/a\n# b')).toBe('Replayed from `/logs/a\uFFFD# b`, keyed by client.');
    expect(about('/logs/access.log')).toBe('Replayed from `/logs/access.log`, keyed by client.');
  });

  it('says a cost that can never pass gets no Retry-After, where it showed a longest Retry-After of 0 s', async () => {
    // A cost of 9 against 5 per 10 s: every algorithm refuses it, and core sends no Retry-After.
    const never = await replay('never.txt', ['1000 big 9', '2000 big 9', '3000 other']);
    const page = renderPage([never], worstWindowChart([never]), new Map([[never, scenarioCharts(never)]]));
    for (const run of never.runs) {
      const row = page.split('\n').find((line) => line.startsWith(`| \`${run.name}\` `));
      expect(row, run.name).toMatch(/\| +never passes \| +– \|$/);
      expect(run.totals).toMatchObject({ refused: 2, neverPass: 2, maxRetryAfterMs: 0 });
    }
    // A refusal that could pass later keeps its wait beside the count that never can.
    const mixed = await replay('mixed.txt', ['1000 big 9', ...range(1_100, 6, 10).map((t) => `${t} small`)]);
    const mixedPage = renderPage([mixed], worstWindowChart([mixed]), new Map([[mixed, scenarioCharts(mixed)]]));
    const log = mixedPage.split('\n').find((line) => line.startsWith('| `sliding-window-log` '));
    expect(log).toMatch(/\| +9\.\d+ s; 1 never passes \| +– \|$/);
  });

  it('shows a wait under 5 ms to the ms, where it read 0 s', async () => {
    // Ten at one instant against 5 per 5 ms: gcra frees a unit each millisecond.
    const burst = await replay(
      'burst.txt',
      range(1_000, 10, 0).map((t) => `${t} k`),
      5,
    );
    const page = renderPage([burst], worstWindowChart([burst]), new Map([[burst, scenarioCharts(burst)]]));
    const gcra = burst.runs.find((run) => run.name === 'gcra');
    expect(gcra?.totals.maxRetryAfterMs).toBe(1);
    const row = page.split('\n').find((line) => line.startsWith('| `gcra` '));
    expect(row).toMatch(/\| +0\.001 s \| +– \|$/);
  });

  it.each([
    ['ten years', 'years', ['0 a', `${10 * 365 * 86_400_000} a`]],
    ['millennia', 'years', ['0 a', '999999999999999 a']],
    ['a week', 'days', ['0 a', `${7 * 86_400_000} a`]],
  ])(
    'charts a trace spanning %s in about 120 buckets (one bucket a day ran out of memory), its time axis in %s',
    async (name, unit, lines) => {
      const long = await replay(`${name.replace(' ', '-')}.txt`, lines);
      expect(long.offered.values.length).toBeLessThanOrEqual(122);
      const charts = scenarioCharts(long);
      expect(charts).toHaveLength(2);
      // Labelled in hours, ten years read 87,600 at the axis's end.
      for (const chart of charts) expect(chart.svg).toContain(`(${unit})</text>`);
      expect(renderPage([long], worstWindowChart([long]), new Map([[long, charts]]))).toContain('## Recorded trace');
    },
  );

  it.each([
    ['31 ms', ['1000 a', '1000 a', '1030 a', '1031 b'], ['0', '5', '10', '15', '20', '25', '30']],
    ['1 ms', ['1000 a'], ['0', '0.2', '0.4', '0.6', '0.8', '1']],
  ])(
    'labels each time tick of a trace spanning %s apart, in ms (in seconds to two decimals, they read 0, 0.01, 0.01, … or all 0)',
    async (_, lines, expected) => {
      const short = await replay('short.txt', lines);
      for (const chart of scenarioCharts(short)) {
        expect(chart.svg).toContain('>time since start (ms)</text>');
        expect(tickLabels(chart.svg, 'x')).toEqual(expected);
      }
    },
  );

  it('labels each rate tick of a low-rate trace apart (at two decimals, 0.001 to 0.004 requests/s all read 0)', async () => {
    // 200 requests, one every 7.2 minutes, from 20 clients: 2 or 3 in each 15-minute bucket.
    const slow = await replay(
      'slow.txt',
      range(0, 200, 432_000).map((t, i) => `${t} c${i % 20}`),
    );
    expect(slow.buckets.bucketMs).toBe(900_000);
    const [admitted] = scenarioCharts(slow);
    expect(admitted?.svg).toContain('>requests per second</text>');
    expect(tickLabels(admitted?.svg, 'y')).toEqual(['0', '0.001', '0.002', '0.003', '0.004']);
  });

  it('labels a limit under 0.005/s by its value (a limit of 1 an hour read "limit 0/s")', async () => {
    const hourly = await runScenario({
      id: 'hourly',
      title: 'Hourly',
      about: '',
      traffic: () => range(0, 3, 1_000).map((t) => ({ at: t, key: 'a', cost: 1 })),
      limit: 1,
      windowMs: 3_600_000,
      charts: [],
    });
    expect(scenarioCharts(hourly)[0]?.svg).toContain('>limit 0.000278/s</text>');
  });

  it('says "1 request" in a chart and on the console, not "1 requests"', async () => {
    const one = await replay('one.txt', ['1000 a']);
    expect(scenarioCharts(one)[0]?.svg).toContain('; 1 request from 1 client;');
    expect(scenarioDone(one)).toBe('recorded-trace: 1 request × 6 limiters');
    const costly = await replay('one-costly.txt', ['1000 a 3']);
    expect(scenarioCharts(costly)[0]?.svg).toContain('; 1 request (3 cost units) from 1 client;');
    const page = renderPage([costly], worstWindowChart([costly]), new Map([[costly, scenarioCharts(costly)]]));
    expect(page).toContain('(3 offered in 1 request)');
    expect(scenarioDone(result)).toBe('recorded-trace: 11 requests × 6 limiters');
  });

  it('draws a series too long to spread into Math.max (it overflowed the call stack)', () => {
    const values = Array.from({ length: 500_000 }, (_, i) => i % 7);
    const svg = lineChart({
      title: 'long',
      yLabel: 'requests',
      lines: [{ label: 'offered', series: { startMs: 0, bucketMs: 1, values } }],
      originMs: 0,
    });
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
  });

  // The margins were fixed: "limit 0.0000116/s" showed as "limit 0.000011", a tick of
  // 1,250,000,000 as "50,000,000" over the axis' title, and a long subtitle ran off the chart.
  it('keeps every label inside the chart, clear of the y axis title, however long', () => {
    const svg = lineChart({
      title: 'wide',
      subtitle: `Requests of the busiest client (${'k'.repeat(200)}) admitted in the trailing 1 min, the most per 5 s; above the dashed line is excess over the limit`,
      yLabel: 'cost units per second',
      lines: [{ label: 'offered', series: { startMs: 0, bucketMs: 1000, values: [0, 1_200_000_000, 3] } }],
      reference: { value: 1_000_000_000, label: 'limit 0.0000116/s' },
      originMs: 0,
    });
    const texts = [...svg.matchAll(/<text x="([\d.]+)" y="[\d.]+"([^>]*)>([^<]*)<\/text>/g)].map(
      ([, x, attributes, content]) => {
        const width = textWidth(content as string);
        const anchor = attributes?.match(/text-anchor="(\w+)"/)?.[1] ?? 'start';
        const from = Number(x) - (anchor === 'end' ? width : anchor === 'middle' ? width / 2 : 0);
        return { content, from, to: from + width, rotated: attributes?.includes('rotate') };
      },
    );
    expect(texts.map((t) => t.content)).toContain('1,500,000,000');
    expect(texts.map((t) => t.content)).toContain('limit 0.0000116/s');
    for (const t of texts.filter((t) => !t.rotated)) {
      expect(t.from, t.content).toBeGreaterThanOrEqual(18);
      expect(t.to, t.content).toBeLessThanOrEqual(960);
    }
    // The y ticks start clear of the rotated axis title, drawn about x = 18.
    for (const t of texts.filter((t) => /^[\d,.]+$/.test(t.content as string) && t.from < 100))
      expect(t.from, t.content).toBeGreaterThanOrEqual(32);
  });

  it('escapes a ] in a client key in the image alt text of the page, which ended the alt text early', async () => {
    const result = await replay('brackets.txt', ['1000 a]b(c)', '2000 a]b(c)', '3000 other']);
    const charts = scenarioCharts(result);
    const page = renderPage([result], worstWindowChart([result]), new Map([[result, charts]]));
    const image = page.split('\n').find((line) => line.endsWith('(recorded-trace-window.svg)'));
    expect(image).toContain('busiest client (a\\]b(c))');
    // Every ] in the alt text is escaped, so the first unescaped ] is the one that closes it.
    expect(image?.match(/^!\[(?:[^\]\\]|\\.)*\]\(([^)]*)\)$/)?.[1]).toBe('recorded-trace-window.svg');
  });

  it('writes charts that are well-formed XML when a client key holds a control character (a browser showed none)', async () => {
    const key = 'bot\u0001\u001b[1m';
    const result = await replay('control.txt', [`1000 ${key}`, `2000 ${key}`, '3000 other']);
    const window = scenarioCharts(result).find((chart) => chart.file === 'recorded-trace-window.svg');
    expect(window?.svg).toContain('busiest client (bot\uFFFD\uFFFD[1m)');
    // XML 1.0's Char production: nothing else may appear in a document, not even as a reference.
    expect(window?.svg).toMatch(/^[\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]*$/u);
  });
});
