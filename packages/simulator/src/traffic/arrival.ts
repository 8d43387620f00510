import {
  checkOptionNames,
  type Duration,
  describe,
  invalid,
  isEpochMs,
  isOverLimitMark,
  MAX_EPOCH_MS,
  SluiceError,
  toMs,
} from '@sluice/core';
import type { SimulatedDecision } from '../simulate.js';

/** One request offered to the limiter: when (integer epoch ms), from which client, at what cost. */
export interface Arrival {
  readonly at: number;
  readonly key: string;
  readonly cost: number;
}

/** Requests in time order, as every generator and trace reader returns them. */
export type Traffic = readonly Arrival[];

/** Options every generator takes. */
export interface GeneratorOptions {
  /** How long the traffic lasts. */
  duration: Duration;
  /** Time of the first possible request, epoch ms. @default 0 */
  startMs?: number | undefined;
  /**
   * Seed of the pseudo-random source, a whole number from 0 to `Number.MAX_SAFE_INTEGER`: the
   * same seed gives the same traffic, another seed other traffic. @default 1
   */
  seed?: number | undefined;
}

export function trafficError(message: string): SluiceError {
  return new SluiceError('ERR_SLUICE_INVALID_TRAFFIC', `[sluice] ${message}`);
}

/**
 * Throws `ERR_SLUICE_INVALID_TRAFFIC` naming the first entry that is not in time order or has a
 * bad time, key or cost: everything that replays a history relies on it.
 */
export function checkTraffic(traffic: unknown): asserts traffic is Traffic {
  checkEntries(traffic, true, false);
}

/**
 * Throws `ERR_SLUICE_INVALID_TRAFFIC` naming the first entry with a bad time, key or cost, in any
 * order: the measures that add decisions up take them in any order, and read a `cost` of '5'
 * as text, joined onto the sum.
 */
export function checkArrivals(entries: unknown): asserts entries is readonly Arrival[] {
  checkEntries(entries, false, false);
}

/**
 * `checkArrivals` for decisions, with what the measures read of each: `allowed`, `retryAfterMs`
 * (a whole number of ms, or Infinity for a cost that never passes), `delayMs` and `overLimit`.
 * Decisions built from a log of one's own, with a `delayMs` left out or an `allowed` read from
 * CSV as 'false', had the measures count wrong without a word.
 */
export function checkDecisions(entries: unknown, inTimeOrder = false): asserts entries is readonly SimulatedDecision[] {
  checkEntries(entries, inTimeOrder, true);
}

/** One pass that allocates nothing per entry: it runs over millions of them before every measure. */
function checkEntries(entries: unknown, inTimeOrder: boolean, decided: boolean): void {
  if (!Array.isArray(entries)) {
    throw trafficError(`Traffic must be an array of { at, key, cost }${inTimeOrder ? ' in time order' : ''}.`);
  }
  let previousAt = 0;
  for (let index = 0; index < entries.length; index++) {
    const arrival: Arrival | undefined = entries[index];
    if (typeof arrival !== 'object' || arrival === null) throw entryError(index, ' must be { at, key, cost }.');
    // Up to the latest time a limiter's clock takes: past it, the decision failed with a clock
    // error that named no entry.
    if (!isEpochMs(arrival.at))
      throw entryError(index, `: \`at\` must be whole epoch ms from 0 to 2^50; received ${describe(arrival.at)}.`);
    if (inTimeOrder && arrival.at < previousAt)
      throw entryError(index, ` is out of time order: ${arrival.at} ms comes after ${previousAt} ms.`);
    if (typeof arrival.key !== 'string') throw entryError(index, ': `key` must be a string.');
    if (!Number.isSafeInteger(arrival.cost) || arrival.cost <= 0)
      throw entryError(index, `: \`cost\` must be a positive whole number; received ${describe(arrival.cost)}.`);
    if (decided) checkDecided(arrival as SimulatedDecision, index);
    previousAt = arrival.at;
  }
}

function checkDecided(decision: SimulatedDecision, index: number): void {
  const { allowed, retryAfterMs, delayMs, overLimit } = decision;
  if (typeof allowed !== 'boolean')
    throw entryError(index, `: \`allowed\` must be true or false; received ${describe(allowed)}.`);
  if (!isWholeMs(retryAfterMs) && retryAfterMs !== Number.POSITIVE_INFINITY)
    throw entryError(
      index,
      `: \`retryAfterMs\` must be a whole number of ms of 0 or more, or Infinity; received ${describe(retryAfterMs)}.`,
    );
  if (!isWholeMs(delayMs))
    throw entryError(index, `: \`delayMs\` must be a whole number of ms of 0 or more; received ${describe(delayMs)}.`);
  if (overLimit !== undefined && !isOverLimitMark(overLimit))
    throw entryError(
      index,
      `: \`overLimit\` must be 'soft', 'elastic', 'shadow' or left out; received ${describe(overLimit)}.`,
    );
}

const isWholeMs = (value: unknown): boolean => Number.isSafeInteger(value) && (value as number) >= 0;

const entryError = (index: number, problem: string): SluiceError => trafficError(`Traffic entry ${index}${problem}`);

/**
 * An option's value, or `fallback` when it is left out. `undefined` alone means left out: a
 * `null` reaches the option's check and is refused there, not read as the default.
 */
export const orDefault = <T>(value: T | undefined, fallback: T): T => (value === undefined ? fallback : value);

/**
 * A time from the start of the traffic: a duration, or the start itself, which `toMs` refuses
 * (a duration is never 0, but a peak or a flash crowd can come at the very start).
 */
export function offsetMs(value: unknown, option: string): number {
  if (value === 0 || (typeof value === 'string' && /^0+(?:\.0+)?(?:ms|s|m|h|d)$/.test(value))) return 0;
  try {
    return toMs(value, option);
  } catch {
    // `toMs` asks for a positive duration, which would not say that 0 is taken too.
    invalid(
      'ERR_SLUICE_INVALID_DURATION',
      option,
      value,
      "0 for the start, or a positive whole number of milliseconds or a string such as '500ms', '1s', '1m', '1h' or '1d'",
    );
  }
}

/** A finite number > 0 (or ≥ 0), else a coded error naming the option. */
export function positiveNumber(value: unknown, option: string, allowZero = false): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || (value === 0 && !allowZero)) {
    throw trafficError(
      `Traffic option \`${option}\` must be a ${allowZero ? 'non-negative' : 'positive'} number; received ${describe(value)}.`,
    );
  }
  return value;
}

export function positiveInteger(value: unknown, option: string): number {
  if (!Number.isSafeInteger(value) || (value as number) <= 0) {
    throw trafficError(`Traffic option \`${option}\` must be a positive whole number; received ${describe(value)}.`);
  }
  return value as number;
}

/**
 * A generator's options (`what`: "traffic", or the nested option's name), checked to be an
 * object naming only `known` options before any option is read: a misspelt one (`ratePerSec`)
 * would otherwise be dropped and its default used.
 */
export function generatorOptions<T>(options: T, known: readonly string[], what = 'traffic'): T {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw trafficError(`Traffic options must be an object; received ${describe(options)}.`);
  }
  checkOptionNames(options, known, what, trafficError);
  return options;
}

/** A client key (`allowEmpty` for a prefix), or `fallback` when left out; never coerced to text. */
export function keyOption(value: unknown, option: string, fallback: string, allowEmpty = false): string {
  if (value === undefined) return fallback;
  if (typeof value !== 'string' || (value === '' && !allowEmpty)) {
    throw trafficError(
      `Traffic option \`${option}\` must be ${allowEmpty ? 'text' : 'text that is not empty'}; received ${describe(value)}.`,
    );
  }
  return value;
}

/**
 * The most requests one generator call makes. Each is an object of some 50 bytes or more: past
 * this, options such as a rate of a million a second over a day would exhaust the heap (or an
 * array's length) after minutes of work, where they now fail at once.
 */
export const MAX_ARRIVALS = 5_000_000;

/**
 * The most clients a Zipf-shared generator takes. It keeps a table entry per client (8 bytes
 * each); one call makes at most {@link MAX_ARRIVALS} requests, so more clients could never all
 * send one, and 2^40 would fail the table's allocation with an uncoded RangeError.
 */
export const MAX_CLIENTS = MAX_ARRIVALS;

/** The `clients` option of a Zipf-shared generator: a whole number from 1 to {@link MAX_CLIENTS}. */
export function clientCount(value: unknown): number {
  const clients = positiveInteger(value, 'clients');
  if (clients > MAX_CLIENTS) {
    throw trafficError(
      `Traffic option \`clients\` must be at most ${MAX_CLIENTS}, the most requests one call makes; received ${clients}.`,
    );
  }
  return clients;
}

/**
 * Refuses options whose traffic could hold `most` requests, more than {@link MAX_ARRIVALS}: all
 * of a call's traffic together, checked before any is made.
 */
export function checkArrivalCount(most: number): void {
  if (most > MAX_ARRIVALS) {
    throw trafficError(
      `These traffic options can make about ${most.toPrecision(3)} requests, more than the ${MAX_ARRIVALS} one call may make; shorten \`duration\` or lower the rate.`,
    );
  }
}

/**
 * The most requests random (Poisson) arrivals of `mean` expected requests make, bar about one
 * seed in a billion: their count spreads √mean around the mean, and six times that is room
 * enough. Held to the mean alone, options at the bound would pass it for about half the seeds.
 */
export const poissonMost = (mean: number): number => mean + 6 * Math.sqrt(mean);

/** The refusal of a random draw that would pass {@link MAX_ARRIVALS} after all (see `poissonMost`). */
export function tooManyDrawn(): SluiceError {
  return trafficError(
    `This seed's traffic came out at more than the ${MAX_ARRIVALS} requests one call may make; shorten \`duration\`, lower the rate or take another seed.`,
  );
}

/** A day in ms: a diurnal cycle, a leap second's place, a span a report's axis steps by. */
export const DAY_MS = 86_400_000;

/** The options of `GeneratorOptions`, which every generator but `boundaryAttack` takes. */
export const SPAN_OPTIONS = ['duration', 'startMs', 'seed'] as const;

/** The window [startMs, endMs) and the seed of a generator's options. */
export function span(options: GeneratorOptions): { startMs: number; endMs: number; seed: number } {
  const startMs = startOption(options.startMs);
  const seed = orDefault(options.seed, 1);
  if (!Number.isSafeInteger(seed) || seed < 0) {
    throw trafficError(
      `Traffic option \`seed\` must be a whole number from 0 to Number.MAX_SAFE_INTEGER; received ${describe(seed)}.`,
    );
  }
  const endMs = startMs + toMs(options.duration, 'duration');
  checkEnd(endMs, '`startMs` and `duration`');
  return { startMs, endMs, seed };
}

/** A generator's `startMs`: whole epoch ms, 0 when left out. */
export function startOption(value: unknown): number {
  const startMs = orDefault(value, 0);
  if (!Number.isSafeInteger(startMs) || (startMs as number) < 0) {
    throw trafficError(`Traffic option \`startMs\` must be a whole number ≥ 0; received ${describe(startMs)}.`);
  }
  return startMs as number;
}

/**
 * Refuses `options` whose traffic runs until `endMs` (exclusive), past 2^50 ms, the latest time a
 * limiter's clock takes: made anyway, `simulate` refused it naming an entry, not the options.
 */
export function checkEnd(endMs: number, options: string): void {
  if (endMs > MAX_EPOCH_MS) {
    throw trafficError(
      `Traffic options ${options} must end by 2^50 ms, the latest time a limiter's clock takes; they end at ${endMs}.`,
    );
  }
}

/** Merges arrival lists into one in time order; ties keep list order, so the result is deterministic. */
export function merge(...lists: Arrival[][]): Arrival[] {
  return lists.flat().sort((a, b) => a.at - b.at);
}
