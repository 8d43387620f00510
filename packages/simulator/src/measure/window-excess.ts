import type { SimulatedDecision } from '../simulate.js';
import { checkDecisions } from '../traffic/arrival.js';
import { checkLimit, checkMs } from './checks.js';
import { type Buckets, frame, type Series } from './series.js';

export interface WorstWindow {
  /** The most cost admitted for one key within any window (t − W, t]. */
  admitted: number;
  /** `admitted − limit` when positive, else 0. */
  excess: number;
  /** `admitted ÷ limit`: 2 means twice the limit got through. */
  ratio: number;
  /** The key and the window's end `t`, epoch ms (undefined when nothing was admitted). */
  key: string | undefined;
  atMs: number | undefined;
}

/** When an admitted request reaches the protected service: queue mode holds it `delayMs`. */
const passedAt = (d: SimulatedDecision): number => d.at + d.delayMs;

/**
 * Admitted (time, cost) per key, in the order they reach the service. Release times need not
 * follow arrival order: under elastic throttling the queue's tolerance moves with the load, so
 * a later request can be released before an earlier one.
 */
function admittedByKey(decisions: readonly SimulatedDecision[]): Map<string, { at: number[]; cost: number[] }> {
  const byKey = new Map<string, { at: number; cost: number }[]>();
  for (const d of decisions) {
    if (!d.allowed) continue;
    let entries = byKey.get(d.key);
    if (entries === undefined) {
      entries = [];
      byKey.set(d.key, entries);
    }
    entries.push({ at: passedAt(d), cost: d.cost });
  }
  const sorted = new Map<string, { at: number[]; cost: number[] }>();
  for (const [key, entries] of byKey) {
    entries.sort((a, b) => a.at - b.at);
    sorted.set(key, { at: entries.map((e) => e.at), cost: entries.map((e) => e.cost) });
  }
  return sorted;
}

/**
 * The worst excess over `limit` in any window of length `windowMs`, per key, at the time
 * each request reaches the service: the figure a limit exists to bound. An exact sliding log
 * scores 0; aligned fixed windows reach 2 × limit at a boundary.
 */
export function worstWindow(decisions: readonly SimulatedDecision[], limit: number, windowMs: number): WorstWindow {
  checkDecisions(decisions);
  checkLimit(limit);
  checkMs(windowMs, 'windowMs');
  let worst: WorstWindow = { admitted: 0, excess: 0, ratio: 0, key: undefined, atMs: undefined };
  for (const [key, { at, cost }] of admittedByKey(decisions)) {
    let sum = 0;
    for (let right = 0, left = 0; right < at.length; right++) {
      sum += cost[right] as number;
      while ((at[left] as number) <= (at[right] as number) - windowMs) sum -= cost[left++] as number;
      if (sum > worst.admitted) {
        worst = { admitted: sum, excess: Math.max(0, sum - limit), ratio: sum / limit, key, atMs: at[right] as number };
      }
    }
  }
  return worst;
}

/**
 * Cost admitted in the trailing window (t − W, t], the most per bucket, for decisions of one
 * client: the curve whose peak `worstWindow` reports, to draw against the limit.
 */
export function trailingWindowSeries(
  decisions: readonly SimulatedDecision[],
  windowMs: number,
  buckets: Buckets,
): Series {
  checkMs(windowMs, 'windowMs');
  const { startMs, count } = frame(decisions, buckets, passedAt, checkDecisions);
  const { bucketMs } = buckets;
  const passed = decisions.filter((d) => d.allowed).map((d) => ({ at: passedAt(d), cost: d.cost }));
  passed.sort((a, b) => a.at - b.at);
  const values = new Array<number>(count).fill(0);
  // The trailing sum only rises at a request and only falls as time passes, so its most in a
  // bucket is at the bucket's start or just after a request in it: walk both in time order.
  let sum = 0;
  let left = 0;
  let right = 0;
  const slide = (t: number) => {
    while (left < right && (passed[left]?.at as number) <= t - windowMs) sum -= passed[left++]?.cost as number;
  };
  for (let i = 0; i < count; i++) {
    const bucketStart = startMs + i * bucketMs;
    const bucketEnd = bucketStart + bucketMs - 1;
    // Requests before the series starts still fill the windows that end in its first bucket.
    while (right < passed.length && (passed[right]?.at as number) < bucketStart) sum += passed[right++]?.cost as number;
    slide(bucketStart);
    let best = sum;
    while (right < passed.length && (passed[right]?.at as number) <= bucketEnd) {
      const event = passed[right++] as { at: number; cost: number };
      sum += event.cost;
      slide(event.at);
      best = Math.max(best, sum);
    }
    values[i] = best;
  }
  return { startMs, bucketMs, values };
}
