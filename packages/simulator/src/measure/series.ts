import { checkOptionNames, describe, invalid, MAX_EPOCH_MS, SluiceError } from '@sluice/core';
import type { SimulatedDecision } from '../simulate.js';
import { type Arrival, checkArrivals, checkDecisions, orDefault } from '../traffic/arrival.js';
import { checkMs } from './checks.js';

/** Values per time bucket: bucket i covers [startMs + i·bucketMs, startMs + (i+1)·bucketMs). */
export interface Series {
  startMs: number;
  bucketMs: number;
  /** `undefined` where a bucket has nothing to show (a gap in a line). */
  values: (number | undefined)[];
}

export interface Buckets {
  bucketMs: number;
  /** @default the first decision's time (release, for `releasedSeries`), rounded down to a bucket */
  startMs?: number | undefined;
  /** Not before `startMs`. @default just after the last decision's time (release, for `releasedSeries`) */
  endMs?: number | undefined;
}

/** A bad `Buckets`, a misspelt name in it included: one code for all. */
const optionError = (message: string) => new SluiceError('ERR_SLUICE_INVALID_OPTION', `[sluice] ${message}`);

const atTime = (d: Arrival): number => d.at;

/** The most buckets a series may have: far more than a chart can show, and 8 MB of numbers. */
export const MAX_BUCKETS = 1_000_000;

/**
 * The buckets' first start, their number, and the bucket a time falls in, defaults taken from
 * the times `timeOf` gives: queue mode releases requests after the last arrival, and a default
 * end at that arrival would leave them out. Every series checks its decisions and buckets here.
 */
export function frame<T extends Arrival>(
  decisions: readonly T[],
  buckets: Buckets,
  timeOf: (d: T) => number = atTime,
  check: (entries: readonly T[]) => void = checkArrivals,
) {
  check(decisions);
  if (typeof buckets !== 'object' || buckets === null) {
    throw optionError(`Buckets must be { bucketMs, startMs?, endMs? }; received ${describe(buckets)}.`);
  }
  checkOptionNames(buckets, ['bucketMs', 'startMs', 'endMs'], 'buckets', optionError);
  const bucketMs = checkMs(buckets.bucketMs, 'bucketMs');
  let first = decisions.length > 0 ? Number.POSITIVE_INFINITY : 0;
  let last = decisions.length > 0 ? Number.NEGATIVE_INFINITY : 0;
  for (const d of decisions) {
    const at = timeOf(d);
    if (at < first) first = at;
    if (at > last) last = at;
  }
  const startMs = epochMs(orDefault(buckets.startMs, Math.floor(first / bucketMs) * bucketMs), 'startMs');
  // The end is exclusive: just after an arrival at the latest time.
  const endMs = epochMs(orDefault(buckets.endMs, last + 1), 'endMs', MAX_EPOCH_MS + 1);
  if (endMs < startMs) {
    const given = buckets.endMs === undefined ? ' (left out: just after the last decision)' : '';
    invalid('ERR_SLUICE_INVALID_OPTION', 'endMs', endMs, `at least \`startMs\` (${startMs})${given}`);
  }
  const count = Math.max(1, Math.ceil((endMs - startMs) / bucketMs));
  // One bucket per millisecond of a long trace would fill the memory before any chart is drawn.
  if (count > MAX_BUCKETS) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_DURATION',
      `[sluice] Option \`bucketMs\` must be at least ${Math.ceil((endMs - startMs) / MAX_BUCKETS)} ms to cover ${startMs}–${endMs} ms in at most ${MAX_BUCKETS.toLocaleString('en-US')} buckets; received ${bucketMs}.`,
    );
  }
  const index = (at: number) => Math.floor((at - startMs) / bucketMs);
  return { startMs, count, index };
}

function epochMs(value: unknown, option: string, most = MAX_EPOCH_MS): number {
  // As an arrival's `at`: a bucket before 1970 or past a limiter's latest time holds nothing.
  if (!Number.isSafeInteger(value) || (value as number) < 0 || (value as number) > most)
    invalid('ERR_SLUICE_INVALID_OPTION', option, value, `whole epoch milliseconds from 0 to ${most}`);
  return value as number;
}

/** Sum of `cost` per bucket over the decisions `select` keeps, at the time `timeOf` gives. */
export function costSeries<T extends Arrival>(
  decisions: readonly T[],
  buckets: Buckets,
  select: (d: T) => boolean = () => true,
  timeOf: (d: T) => number = atTime,
): Series {
  return costs(decisions, buckets, select, timeOf, checkArrivals);
}

/** `costSeries`, with the check its entries get: a series of decisions reads what was decided. */
function costs<T extends Arrival>(
  decisions: readonly T[],
  buckets: Buckets,
  select: (d: T) => boolean,
  timeOf: (d: T) => number,
  check: (entries: readonly T[]) => void,
): Series {
  const { startMs, count, index } = frame(decisions, buckets, timeOf, check);
  const values = new Array<number>(count).fill(0);
  for (const d of decisions) {
    const i = index(timeOf(d));
    if (select(d) && i >= 0 && i < count) values[i] = (values[i] as number) + d.cost;
  }
  return { startMs, bucketMs: buckets.bucketMs, values };
}

/** Offered load: every request's cost per bucket (of traffic or of decisions). */
export const offeredSeries = (traffic: readonly Arrival[], buckets: Buckets): Series => costSeries(traffic, buckets);

/** Admitted load per bucket, counted when the request was let through. */
export const admittedSeries = (decisions: readonly SimulatedDecision[], buckets: Buckets): Series =>
  costs(decisions, buckets, (d) => d.allowed, atTime, checkDecisions);

/** Admitted load per bucket counted when queue mode releases it (`at + delayMs`): the shaped outflow. */
export const releasedSeries = (decisions: readonly SimulatedDecision[], buckets: Buckets): Series =>
  costs(
    decisions,
    buckets,
    (d) => d.allowed,
    (d) => d.at + d.delayMs,
    checkDecisions,
  );

/** The largest `value` of the selected decisions in each bucket; a gap where none was selected. */
export function maxSeries(
  decisions: readonly SimulatedDecision[],
  buckets: Buckets,
  value: (d: SimulatedDecision) => number | undefined,
): Series {
  const { startMs, count, index } = frame(decisions, buckets, atTime, checkDecisions);
  const values = new Array<number | undefined>(count).fill(undefined);
  for (const d of decisions) {
    const v = value(d);
    const i = index(d.at);
    if (v === undefined || !Number.isFinite(v) || i < 0 || i >= count) continue;
    values[i] = Math.max(values[i] ?? v, v);
  }
  return { startMs, bucketMs: buckets.bucketMs, values };
}

/** What refused clients were told to wait (`Retry-After`), the longest per bucket. */
export const retryAfterSeries = (decisions: readonly SimulatedDecision[], buckets: Buckets): Series =>
  maxSeries(decisions, buckets, (d) => (d.allowed ? undefined : d.retryAfterMs));

/** Queue mode's added delay, the longest per bucket among requests let through. */
export const delaySeries = (decisions: readonly SimulatedDecision[], buckets: Buckets): Series =>
  maxSeries(decisions, buckets, (d) => (d.allowed ? d.delayMs : undefined));
