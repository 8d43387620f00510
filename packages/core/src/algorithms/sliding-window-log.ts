import type { Algorithm } from './algorithm.js';

/**
 * Sliding window log: the (time, cost) of every allowed request in (now − W, now].
 * State: `[t1, cost1, t2, cost2, …]` oldest first; requests at the same ms share an entry.
 * Exact, and its size is bounded by the limit because every entry costs at least 1.
 */
export const slidingWindowLog: Algorithm = {
  evaluate(state, policy, capacity, cost, now) {
    const windowMs = policy.windowMs;
    const live = prune(state, now - windowMs);
    let used = 0;
    for (let i = 1; i < live.length; i += 2) used += live[i] as number;
    if (used + cost <= capacity) {
      const next = live.slice();
      // Logged at the newest entry's time when the clock stands behind it, so the log stays in
      // order and its reset and waits count the lag. A peek (cost 0) logs nothing: an empty
      // entry would push the reset time out by a window.
      const at = next.length > 0 ? Math.max(now, next[next.length - 2] as number) : now;
      if (cost > 0 && next.length > 0 && next[next.length - 2] === at)
        next[next.length - 1] = (next[next.length - 1] as number) + cost;
      else if (cost > 0) next.push(at, cost);
      return {
        allowed: true,
        remaining: capacity - used - cost,
        // Whole: `Math.trunc` keeps it a small integer (see `Algorithm`), here and below.
        resetAfterMs: next.length > 0 ? Math.trunc((next[next.length - 2] as number) + windowMs - now) : 0,
        retryAfterMs: 0,
        delayMs: 0,
        next,
      };
    }
    return {
      allowed: false,
      remaining: Math.max(0, capacity - used),
      resetAfterMs: live.length > 0 ? Math.trunc((live[live.length - 2] as number) + windowMs - now) : 0,
      retryAfterMs: retryAfter(live, used, capacity, cost, windowMs, now),
      delayMs: 0,
      next: live,
    };
  },

  seed: (used, _policy, now) => (used > 0 ? [now, used] : []),

  refund(state, policy, _capacity, cost, now, _chargedAt, chargedBy) {
    const next = prune(state, now - policy.windowMs).slice();
    // The newest entries logged by the charge: a later entry is a later request's.
    let end = next.length;
    while (end > 0 && (next[end - 2] as number) > chargedBy) end -= 2;
    let left = cost;
    while (left > 0 && end > 0) {
      end -= 2;
      const units = next[end + 1] as number;
      if (units > left) {
        next[end + 1] = units - left;
        left = 0;
      } else {
        left -= units;
        next.splice(end, 2);
      }
    }
    return next;
  },
};

/** Drops entries at or before `boundary`; they are outside (now − W, now]. */
function prune(state: readonly number[] | undefined, boundary: number): readonly number[] {
  if (state === undefined) return [];
  let start = 0;
  while (start < state.length && (state[start] as number) <= boundary) start += 2;
  return start === 0 ? state : state.slice(start);
}

/** Entry i leaves the window at t_i + W; wait until enough of the oldest have left. */
function retryAfter(
  live: readonly number[],
  used: number,
  capacity: number,
  cost: number,
  windowMs: number,
  now: number,
): number {
  let left = used;
  for (let i = 0; i < live.length; i += 2) {
    left -= live[i + 1] as number;
    if (left + cost <= capacity) return Math.trunc((live[i] as number) + windowMs - now);
  }
  return windowMs;
}
