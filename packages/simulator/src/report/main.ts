#!/usr/bin/env node
import { writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { isSluiceError } from '@sluice/core';
import { type Chart, scenarioCharts, worstWindowChart } from './charts.js';
import { parseCliOptions, prepareOut, readTraceOption, USAGE } from './cli-options.js';
import { renderPage } from './page.js';
import { runScenario, type ScenarioResult, scenarioDone } from './run-scenario.js';
import { scenarios } from './scenarios.js';

/** A bad command line exits 2, as `sluice serve`'s does; a run that fails, 1. */
const BAD_COMMAND_LINE = 2;

async function main(): Promise<void> {
  // Relative paths are the working directory's, as the README says: npm and pnpm set INIT_CWD
  // for every script, to where the command was typed, which need not be where its script runs.
  const cwd = process.cwd();
  let options: ReturnType<typeof parseCliOptions>;
  try {
    options = parseCliOptions(process.argv.slice(2), cwd);
  } catch (error) {
    console.error(`simulate: ${(error as Error).message}\n\n${USAGE}`);
    process.exitCode = BAD_COMMAND_LINE;
    return;
  }
  if (options === undefined) {
    console.log(USAGE);
    return;
  }
  const { out, trace, throttle } = options;
  const traffic = await readTraceOption(trace.path);
  await prepareOut(out);
  const started = performance.now();
  const results: ScenarioResult[] = [];
  const charts = new Map<ScenarioResult, Chart[]>();
  for (const scenario of scenarios({ ...trace, traffic })) {
    const result = await runScenario(scenario, throttle);
    results.push(result);
    charts.set(result, scenarioCharts(result));
    console.log(scenarioDone(result));
  }
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
