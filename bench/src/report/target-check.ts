import { ratio } from '../lib/format.js';
import { median } from '../lib/stats.js';
import type { InprocResult, RunResults } from '../results.js';
import type { HttpRow } from './http-summary.js';

/** The median of several paired measurements, with their range. */
export interface Spread {
  median: number;
  min: number;
  max: number;
  /** How many pairs (or runs) the median is taken over. */
  count: number;
}

/** A ratio with its range: '1.02 (0.98–1.05)'. */
export const withRange = (value: number, min: number, max: number): string =>
  `${ratio(value)} (${ratio(min)}–${ratio(max)})`;

/** A paired quotient's median and range, as a bound or context. */
export const spreadShown = (spread: Spread | undefined): string =>
  spread === undefined ? '–' : withRange(spread.median, spread.min, spread.max);

export interface TargetCheck {
  target: string;
  /** The measured value: a ratio, bytes, or µs. */
  value: number | undefined;
  /** Range of the paired measurements `value` is the median of; absent for a single figure. */
  spread?: Spread | undefined;
  unit: 'ratio' | 'bytes' | 'µs';
  goal: string;
  /**
   * The control or floor this target is read against, measured in the same run: what any
   * implementation could reach on this machine. Absent or empty when nothing bounds it.
   */
  bound?: string;
  /** Other figures worth reading beside it: the peers, the raw rates. */
  context: string;
  met: boolean | undefined;
  /**
   * Whether the control or floor itself misses the goal, measured the same way in the same
   * run: then no implementation could meet it on this machine, and the verdict says so.
   */
  boundMisses?: boolean;
}

/** One section's targets, read from one run. Sections are listed in `targets.ts`. */
export type TargetSection = (results: RunResults, http: readonly HttpRow[]) => TargetCheck[];

/** Whether a result is a run of the cell, taken alone (a pair's runs share the core: see `pairSpread`). */
export const isRunOf = (
  r: InprocResult,
  contender: string,
  keys: number,
  concurrency: number,
  mode: 'pass' | 'deny' = 'pass',
): boolean =>
  r.pair === undefined &&
  r.contender === contender &&
  r.keys === keys &&
  r.concurrency === concurrency &&
  r.mode === mode;

/** Each run of a cell, in the order measured. */
const cellRuns = (
  results: readonly InprocResult[],
  contender: string,
  keys: number,
  concurrency: number,
  mode: 'pass' | 'deny' = 'pass',
): number[] =>
  results
    .filter((r) => isRunOf(r, contender, keys, concurrency, mode))
    .map((r) => r.opsPerSec)
    .filter((ops): ops is number => ops !== undefined);

/** A cell's decisions per second: the median when the run measured it more than once. */
export const cell = (
  results: readonly InprocResult[],
  contender: string,
  keys: number,
  concurrency: number,
  mode: 'pass' | 'deny' = 'pass',
): number | undefined => {
  const runs = cellRuns(results, contender, keys, concurrency, mode);
  return runs.length === 0 ? undefined : median(runs);
};

/**
 * The spread of a cell's runs each divided by its neighbour: the run of the reference cell
 * measured right before or right after it (results are in the order they were measured). A
 * run with no such neighbour (the matrix's, the watch section's) makes no quotient: a ratio of
 * runs minutes apart would carry the machine's drift.
 */
export function neighbourSpread(
  results: readonly InprocResult[],
  contender: string,
  reference: string,
  keys: number,
  concurrency: number,
): Spread | undefined {
  const runsOf = (id: string) =>
    results.flatMap((r, at) => (isRunOf(r, id, keys, concurrency) && r.opsPerSec ? [{ at, ops: r.opsPerSec }] : []));
  const references = runsOf(reference);
  return spreadOf(
    runsOf(contender).flatMap(({ at, ops }) => {
      const neighbour = references.find((r) => Math.abs(r.at - at) === 1);
      return neighbour === undefined ? [] : [ops / neighbour.ops];
    }),
  );
}

/**
 * The spread of a cell's runs each divided by the run of the reference cell it was paired with
 * (`Cell.pair`: the two ran at once on one core), each read in decisions per CPU-second.
 */
export function pairSpread(results: readonly InprocResult[], contender: string, reference: string): Spread | undefined {
  const paired = results.filter((r) => r.pair !== undefined && r.opsPerCpuSec !== undefined);
  return spreadOf(
    paired
      .filter((r) => r.contender === contender)
      .flatMap((run) => {
        const partner = paired.find((r) => r.pair === run.pair && r.contender === reference);
        return partner === undefined ? [] : [(run.opsPerCpuSec as number) / (partner.opsPerCpuSec as number)];
      }),
  );
}

/** Median and range of some finite values; undefined for none. */
export function spreadOf(values: readonly number[]): Spread | undefined {
  const finite = values.filter(Number.isFinite);
  if (finite.length === 0) return undefined;
  return { median: median(finite), min: Math.min(...finite), max: Math.max(...finite), count: finite.length };
}

export const atLeast = (value: number | undefined, goal: number) =>
  value === undefined || Number.isNaN(value) ? undefined : value >= goal;
export const atMost = (value: number | undefined, goal: number) =>
  value === undefined || Number.isNaN(value) ? undefined : value <= goal;
export const above = (value: number | undefined, goal: number) =>
  value === undefined || Number.isNaN(value) ? undefined : value > goal;
export const over = (a: number | undefined, b: number | undefined) =>
  a === undefined || b === undefined ? undefined : a / b;
