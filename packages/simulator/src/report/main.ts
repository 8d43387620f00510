#!/usr/bin/env node
import { mkdir, writeFile } from 'node:fs/promises';
import { join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { isSluiceError, type Throttle, toMs } from '@sluice/core';
import { type Chart, scenarioCharts, worstWindowChart } from './charts.js';
import { renderPage } from './page.js';
import { runScenario, type ScenarioResult } from './run-scenario.js';
import { SAMPLE_TRACE, scenarios } from './scenarios.js';

const usage = `Usage: pnpm simulate [--out DIR] [--trace FILE [--limit N] [--window DURATION]] [--throttle MODE]

Runs every algorithm on the same traffic in virtual time and writes charts (SVG) and a
markdown page with the figures to DIR (default docs/simulations/).

  --trace FILE       replay FILE as the recorded trace: plain "timestamp key [cost]" lines
                     or a Common/Combined Log Format access log (default: the shipped sample)
  --limit N          the trace's limit per client (default 60)
  --window DURATION  the trace's window, e.g. 1m (default 1m)
  --throttle MODE    run every limiter in a throttle mode: hard (default), soft:PERCENT
                     (e.g. soft:20) or shadow`;

/** `hard`, `shadow` or `soft:<percent>`; elastic needs a live load probe, which virtual time has not. */
function parseThrottle(value: string | undefined): Throttle | undefined {
  if (value === undefined || value === 'hard') return undefined;
  if (value === 'shadow') return { mode: 'shadow' };
  const soft = /^soft:(\d+)$/.exec(value);
  if (soft) return { mode: 'soft', overagePercent: Number(soft[1]) };
  throw new Error(`--throttle must be hard, shadow or soft:PERCENT; received ${value}`);
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      out: { type: 'string' },
      trace: { type: 'string' },
      limit: { type: 'string' },
      window: { type: 'string' },
      throttle: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log(usage);
    return;
  }
  // `pnpm simulate` runs in the workspace root; INIT_CWD is where the user typed it.
  const cwd = process.env.INIT_CWD ?? process.cwd();
  const out = resolve(cwd, values.out ?? 'docs/simulations');
  const limit = values.limit === undefined ? 60 : Number(values.limit);
  if (!Number.isSafeInteger(limit) || limit <= 0)
    throw new Error(`--limit must be a positive whole number; received ${values.limit}`);
  const trace = {
    path: values.trace === undefined ? SAMPLE_TRACE : resolve(cwd, values.trace),
    limit,
    windowMs: toMs(values.window ?? '1m', '--window'),
  };
  const throttle = parseThrottle(values.throttle);
  const started = performance.now();
  const results: ScenarioResult[] = [];
  const charts = new Map<ScenarioResult, Chart[]>();
  for (const scenario of scenarios(trace)) {
    const result = await runScenario(scenario, throttle);
    results.push(result);
    charts.set(result, scenarioCharts(result));
    const limiters = result.runs.length + (result.queue ? 1 : 0) + (result.shapingRefuses ? 1 : 0);
    console.log(`${scenario.id}: ${result.requests.toLocaleString('en-US')} requests × ${limiters} limiters`);
  }
  await mkdir(out, { recursive: true });
  const summary = worstWindowChart(results);
  for (const chart of [summary, ...[...charts.values()].flat()]) await writeFile(join(out, chart.file), chart.svg);
  await writeFile(join(out, 'README.md'), renderPage(results, summary, charts, throttle));
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  console.log(
    `Wrote ${relative(cwd, join(out, 'README.md')) || 'README.md'} and ${[...charts.values()].flat().length + 1} charts in ${seconds} s.`,
  );
}

main().catch((error: unknown) => {
  console.error(isSluiceError(error) || error instanceof Error ? `simulate: ${error.message}` : error);
  process.exitCode = 1;
});
