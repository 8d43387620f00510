import { performance } from 'node:perf_hooks';
import { invalid } from './errors.js';
import { checkKnownOptions, refuseInherited, unsetOptions } from './known-options.js';
import { isThenable } from './thenable.js';
import type { Policy, Throttle } from './types.js';

const MAX_OVERAGE_PERCENT = 1000;
/** Soft and elastic throttling raise a capacity at most this many times. */
export const MAX_CAPACITY_FACTOR = 1 + MAX_OVERAGE_PERCENT / 100;

/** Each mode's options. */
const allowedOptions = new Map([
  ['hard', ['mode']],
  ['soft', ['mode', 'overagePercent']],
  ['elastic', ['mode', 'maxOveragePercent', 'load']],
  ['shadow', ['mode']],
]);

/** Every mode's options together. */
const throttleKeys = new Set([...allowedOptions.values()].flat());

/**
 * The hint for an option of another mode: that mode, which is what a user who wrote
 * `overagePercent` beside `mode: 'hard'` most likely meant to change.
 */
const modeTaking: Readonly<Record<string, string>> = Object.fromEntries(
  [...allowedOptions].flatMap(([mode, keys]) => keys.map((key) => [key, `\`mode: '${mode}'\``])),
);

/** Validates `throttle`; defaults to hard limiting. */
export function toThrottle(value: unknown): Throttle {
  if (value === undefined) return { mode: 'hard' };
  if (typeof value !== 'object' || value === null)
    invalid(
      'ERR_SLUICE_INVALID_THROTTLE',
      'throttle',
      value,
      "an object such as `{ mode: 'soft', overagePercent: 10 }`",
    );
  const throttle = value as Record<string, unknown>;
  refuseInherited(throttle, throttleKeys, (key) => `throttle.${key}`);
  // A Map, not an object: `mode: 'constructor'` must read as no mode, and a mode that only
  // prints as one (`['soft']`) must not pass for it.
  const keys = typeof throttle.mode === 'string' ? allowedOptions.get(throttle.mode) : undefined;
  if (keys === undefined)
    invalid('ERR_SLUICE_INVALID_THROTTLE', 'throttle.mode', throttle.mode, "'hard', 'soft', 'elastic' or 'shadow'");
  // `undefined` means left out, as in `headers` and `ban`: `{ mode: 'hard', overagePercent: undefined }` is hard.
  checkKnownOptions(throttle, [...keys, ...unsetOptions(throttle, throttleKeys)], modeTaking, 'throttle');
  if (throttle.mode === 'soft') percent(throttle.overagePercent, 'throttle.overagePercent');
  if (throttle.mode === 'elastic') {
    percent(throttle.maxOveragePercent, 'throttle.maxOveragePercent');
    if (throttle.load !== undefined && typeof throttle.load !== 'function') {
      invalid(
        'ERR_SLUICE_INVALID_THROTTLE',
        'throttle.load',
        throttle.load,
        'a function returning the load from 0 (idle) to 1 (saturated)',
      );
    }
  }
  return throttle as Throttle;
}

function percent(value: unknown, option: string): void {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0 || value > MAX_OVERAGE_PERCENT) {
    invalid('ERR_SLUICE_INVALID_THROTTLE', option, value, `a number above 0 and at most ${MAX_OVERAGE_PERCENT}`);
  }
}

/**
 * Whether the effective capacities move from one decision to the next: only elastic mode's do,
 * with the load. Under every other mode `capacitiesFor` gives the same list every time.
 */
export const capacitiesVary = (throttle: Throttle): boolean => throttle.mode === 'elastic';

/**
 * Returns a function giving each policy's effective capacity for one decision. Soft mode
 * raises it by a fixed percentage; elastic mode by up to `maxOveragePercent`, less as the
 * load rises (none at load 1). The capacity is a whole number, so every store agrees.
 */
export function capacitiesFor(throttle: Throttle, policies: readonly Policy[]): () => readonly number[] {
  const base = policies.map((p) => p.capacity);
  if (throttle.mode === 'soft') {
    const raised = base.map((c) => raise(c, throttle.overagePercent));
    return () => raised;
  }
  if (throttle.mode === 'elastic') {
    const load = throttle.load ?? eventLoopLoad();
    return () => {
      const headroom = 1 - clamp(readLoad(load));
      return headroom === 0 ? base : lend(policies, throttle.maxOveragePercent * headroom);
    };
  }
  return () => base;
}

/**
 * Each policy's largest effective capacity under `throttle`: soft mode's raised one, elastic
 * mode's at no load. `undefined` in shadow mode, which never refuses.
 */
export function largestCapacities(throttle: Throttle, policies: readonly Policy[]): readonly number[] | undefined {
  if (throttle.mode === 'shadow') return undefined;
  if (throttle.mode === 'elastic') return lend(policies, throttle.maxOveragePercent);
  const percent = throttle.mode === 'soft' ? throttle.overagePercent : 0;
  return policies.map((p) => (percent === 0 ? p.capacity : raise(p.capacity, percent)));
}

/**
 * Elastic mode's capacities when it lends `percent`. A queued policy keeps its own: a queue
 * books each request the slot its capacity gives, and a capacity that rose as the load fell
 * would book a client's later request ahead of its earlier ones, breaking first-in first-out.
 */
const lend = (policies: readonly Policy[], percent: number): number[] =>
  policies.map((p) => (p.maxDelayMs > 0 ? p.capacity : raise(p.capacity, percent)));

/**
 * Elastic mode lends only to policies that refuse (see `lend`): on a limiter whose every policy
 * queues it would lend nothing, so it fails at start-up instead of doing nothing.
 */
export function checkThrottleLends(throttle: Throttle, policies: readonly Policy[]): void {
  if (throttle.mode !== 'elastic' || policies.some((p) => p.maxDelayMs === 0)) return;
  invalid(
    'ERR_SLUICE_INVALID_THROTTLE',
    'throttle.mode',
    throttle.mode,
    "'hard' or 'soft' where every policy queues: elastic mode leaves a queued policy's capacity as it is, since one that rose as the load fell would release a client's later requests before its earlier ones",
  );
}

/**
 * ⌊capacity × (1 + percent/100)⌋, of the percentage as written in decimal. A decimal is not
 * exact in binary (250 × 129.2 / 100 computes as 322.99999999999994), but the sum, the product
 * and the quotient each err by at most half a unit in the last place, within 4 ×
 * `Number.EPSILON` of the result: a result farther than that from a whole number has the plain
 * floor, and one that near is worked out in integers.
 */
const raise = (capacity: number, percent: number): number => {
  const scaled = capacity * (100 + percent);
  // A whole percentage: the product is exact, and its hundredth is never within rounding error
  // of a whole number it is not.
  if (Number.isInteger(percent) && scaled <= Number.MAX_SAFE_INTEGER) return Math.floor(scaled / 100);
  const raised = scaled / 100;
  if (Math.abs(raised - Math.round(raised)) > raised * 4 * Number.EPSILON) return Math.floor(raised);
  return exactRaise(capacity, percent);
};

/** `raise` in integers, of the shortest decimal that reads back as `percent` (as `String` writes it). */
function exactRaise(capacity: number, percent: number): number {
  const [, whole = '', fraction = '', exponent = '0'] =
    /^(\d+)(?:\.(\d+))?(?:e([+-]\d+))?$/.exec(String(percent)) ?? [];
  const shift = fraction.length - Number(exponent);
  const digits = BigInt(whole + fraction);
  // percent = digits × 10^-shift, so capacity × (100 + percent) / 100 = capacity × (100 × scale + digits) / (100 × scale).
  const [numerator, scale] = shift >= 0 ? [digits, 10n ** BigInt(shift)] : [digits * 10n ** BigInt(-shift), 1n];
  return Number((BigInt(capacity) * (100n * scale + numerator)) / (100n * scale));
}

/**
 * A probe that throws lends nothing, as a reading that is no number does: it must not fail the
 * decision. An async probe's promise reads as no number; its rejection, left unheard, ended
 * the process.
 */
function readLoad(load: () => number): unknown {
  let reading: unknown;
  try {
    reading = load();
  } catch {
    return undefined;
  }
  if (isThenable(reading)) reading.then(undefined, () => {});
  return reading;
}

/**
 * A load outside [0, 1] is clamped; one that is not a number (NaN, undefined, a string, an
 * async function's promise) counts as saturated, so a broken probe lends nothing.
 */
const clamp = (load: unknown): number =>
  typeof load !== 'number' || Number.isNaN(load) ? 1 : Math.min(1, Math.max(0, load));

/**
 * The default load probe: the event loop's utilisation over the last full sample period
 * (1 s), so a busy server lends no overage and an idle one lends all of it.
 */
export function eventLoopLoad(sampleMs = 1000): () => number {
  let mark = performance.eventLoopUtilization();
  let markedAt = performance.now();
  let load = 0;
  return () => {
    const at = performance.now();
    if (at - markedAt >= sampleMs) {
      const next = performance.eventLoopUtilization();
      load = performance.eventLoopUtilization(next, mark).utilization;
      mark = next;
      markedAt = at;
    }
    return load;
  };
}
