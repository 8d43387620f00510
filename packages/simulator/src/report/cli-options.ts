import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { isSluiceError, SluiceError, type Throttle, toMs, toPolicy, toThrottle } from '@sluice/core';
import { type Traffic, trafficError } from '../traffic/arrival.js';
import { parseTrace } from '../traffic/trace.js';
import { elasticWithoutLoad } from '../virtual-load.js';
import { PAGE_TITLE } from './page.js';
import { ALGORITHMS } from './run-scenario.js';
import { SAMPLE_TRACE } from './scenarios.js';

export const USAGE = `Usage: sluice-simulate [--out DIR] [--trace FILE [--limit N] [--window DURATION]] [--throttle MODE]

Runs every algorithm on the same traffic in virtual time and writes charts (SVG) and a
markdown page with the figures to DIR (default simulations/, in the current directory; in
sluice's own repository \`pnpm simulate\` writes docs/simulations/). A flag given twice
takes its last value.

  --trace FILE       replay FILE as the recorded trace: plain "timestamp key [cost]" lines
                     or a Common/Combined Log Format access log (default: the shipped sample)
  --limit N          the trace's limit per client, a whole number (default 60)
  --window DURATION  the trace's window, e.g. 1m (default 1m)
  --throttle MODE    run every limiter in a throttle mode: hard (default), soft:PERCENT
                     (e.g. soft:20) or shadow`;

export interface CliOptions {
  /** The directory the page and charts go to, absolute. */
  out: string;
  trace: { path: string; limit: number; windowMs: number };
  throttle: Throttle | undefined;
}

const flagError = (flag: string, received: string, expected: string) =>
  new SluiceError(
    'ERR_SLUICE_INVALID_OPTION',
    `[sluice] --${flag} must be ${expected}; received ${JSON.stringify(received)}.`,
  );

/** Digits only, no sign, exponent, hex, point or padding: `Number()` would take `0x10`, `1e1`, ` 7` and `5.0`. */
function wholeNumber(text: string, flag: string): number {
  const value = Number(text);
  if (!/^[1-9]\d*$/.test(text) || !Number.isSafeInteger(value)) {
    throw flagError(flag, text, 'a positive whole number written in digits, such as 60');
  }
  return value;
}

/** A path flag: empty (an unset shell variable, say) would resolve to the working directory itself. */
function path(text: string, flag: string, cwd: string, what: string): string {
  if (text.trim() === '')
    throw flagError(flag, text, `the path of ${what}, not empty (that would be the current directory)`);
  return resolve(cwd, text);
}

/**
 * The trace's `--limit` per `--window` as core checks it (limit × window at most 2^49, say),
 * for every algorithm the trace runs through. Left to the trace's limiters, a policy core
 * refuses would fail the run only after every other scenario, named as an option of
 * `createLimiter` rather than by the flags.
 */
function checkTracePolicy(limit: number, windowMs: number, window: string): void {
  for (const algorithm of ALGORITHMS) {
    try {
      toPolicy({ limit, window: windowMs, algorithm }, 'policy');
    } catch (error) {
      if (!isSluiceError(error)) throw error;
      // Core names the option `policy.window`; the user wrote it as `--window`.
      const reason = error.message.replace(/^\[sluice\] Option `policy\.([a-z]+)`/, '--$1');
      throw new SluiceError(
        error.code,
        `[sluice] --limit ${limit} per --window ${window} is not a policy core accepts: ${reason}`,
        { cause: error },
      );
    }
  }
}

/** `--window`: a flag is text, so a bare number (a duration in ms elsewhere in sluice) needs its unit here. */
function windowOf(text: string): number {
  try {
    return toMs(text, '--window');
  } catch (error) {
    if (!isSluiceError(error) || !/^\d+$/.test(text)) throw error;
    throw new SluiceError(
      error.code,
      `[sluice] --window must be a positive duration with its unit, such as 1m, 90s or 1500ms; received ${JSON.stringify(text)}.`,
      { cause: error },
    );
  }
}

/** `hard`, `shadow` or `soft:<percent>`; a flag cannot give elastic mode the load function it needs. */
function parseThrottle(value: string | undefined): Throttle | undefined {
  if (value === undefined || value === 'hard') return undefined;
  if (value === 'shadow') return { mode: 'shadow' };
  if (value === 'elastic' || value.startsWith('elastic:')) throw elasticWithoutLoad(`--throttle ${value}`);
  if (value.startsWith('soft:')) {
    const overagePercent = wholeNumber(value.slice('soft:'.length), 'throttle soft:PERCENT');
    try {
      return toThrottle({ mode: 'soft', overagePercent });
    } catch (error) {
      // Core's words name `throttle.overagePercent`, an option this command has not.
      if (!isSluiceError(error)) throw error;
      throw flagError('throttle soft:PERCENT', String(overagePercent), 'at most 1000 (a percent above the limit)');
    }
  }
  throw flagError('throttle', value, 'hard, shadow or soft:PERCENT');
}

/** The command line's options, every flag checked before any simulation starts; `undefined` for `--help`. */
export function parseCliOptions(args: readonly string[], cwd: string): CliOptions | undefined {
  const { values } = parseArgs({
    args: [...args],
    options: {
      out: { type: 'string' },
      trace: { type: 'string' },
      limit: { type: 'string' },
      window: { type: 'string' },
      throttle: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return undefined;
  const out = path(values.out ?? 'simulations', 'out', cwd, 'a directory');
  const window = values.window ?? '1m';
  const trace = {
    path: values.trace === undefined ? SAMPLE_TRACE : path(values.trace, 'trace', cwd, 'a file'),
    limit: values.limit === undefined ? 60 : wholeNumber(values.limit, 'limit'),
    windowMs: windowOf(window),
  };
  checkTracePolicy(trace.limit, trace.windowMs, window);
  return {
    out,
    trace,
    throttle: parseThrottle(values.throttle),
  };
}

/**
 * Creates the output directory and checks it can be written, so a bad `--out` fails before the
 * work; one holding a README.md of someone else's (`--out .` in a project) is refused, as the
 * run would write its page over it.
 */
export async function prepareOut(out: string): Promise<void> {
  const page = join(out, 'README.md');
  let existing: string | undefined;
  try {
    await makeDirectory(out);
    if (!(await stat(out)).isDirectory()) throw new Error(`${out} is not a directory`);
    // Written, not asked: `access` grants root anything, `/proc` included, whose files then
    // failed once every scenario had run.
    const probe = join(out, `.sluice-simulate-${process.pid}`);
    await writeFile(probe, '');
    await rm(probe);
    // Anything but a file or its absence (a directory named README.md, a FIFO, which reading
    // waits on for good) would fail the page's write once every scenario had run, or hang.
    const found = await stat(page).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return undefined;
      throw error;
    });
    if (found !== undefined && !found.isFile()) throw new Error(`${page} is not a file`);
    existing = found === undefined ? undefined : await readFile(page, 'utf8');
  } catch (error) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `[sluice] --out must be a directory that can be written; ${(error as Error).message}.`,
      { cause: error },
    );
  }
  if (existing !== undefined && !existing.startsWith(PAGE_TITLE)) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `[sluice] --out ${out} holds a README.md that sluice-simulate did not write, and the run would write its page over it; name a directory of its own.`,
    );
  }
}

/**
 * `mkdir -p`, a level at a time: Node's recursive mkdir loops for good on a parent that answers
 * ENOENT for a child it can never hold (`--out /proc/charts`), and the run never ended.
 */
async function makeDirectory(path: string): Promise<void> {
  try {
    await mkdir(path);
  } catch (error) {
    const { code } = error as NodeJS.ErrnoException;
    if (code === 'EEXIST') return;
    const parent = dirname(path);
    if (code !== 'ENOENT' || parent === path) throw error;
    await makeDirectory(parent);
    await mkdir(path).catch((again: NodeJS.ErrnoException) => {
      if (again.code !== 'EEXIST') throw again;
    });
  }
}

/**
 * Reads and parses `--trace` before any simulation: the trace is the last scenario, and a
 * missing or malformed file found only then has cost the user every other scenario's run.
 */
export async function readTraceOption(path: string): Promise<Traffic> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `[sluice] --trace must be a file that can be read; ${(error as Error).message}.`,
      { cause: error },
    );
  }
  const traffic = parseTrace(text, { source: path });
  if (traffic.length === 0) throw trafficError(`The trace ${path} has no requests to simulate.`);
  return traffic;
}
