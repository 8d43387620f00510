import type { PolicyOutcome } from '../types.js';
import { type Algorithm, type EvaluateAt, evaluateOf, type State } from './algorithm.js';

/** The decision on the state at `values[at…]`, in place (`Algorithm.evaluateAt`); the algorithm is below. */
const evaluateAt: EvaluateAt = (values, at, fresh, policy, capacity, cost, now, into) => {
  const windowMs = policy.windowMs;
  // The counts read in one pass over the state, the clock's step back (`clockLag`) among its
  // cases: apart, they re-read and re-compared it (`memory-instructions.ts`: 1,845 instructions
  // a decision against 1,799).
  let index = Math.floor(now / windowMs);
  let current = 0;
  let previous = 0;
  let lag = 0;
  if (!fresh) {
    const written = values[at] as number;
    if (written === index) {
      current = values[at + 1] as number;
      previous = values[at + 2] as number;
    } else if (written === index - 1) {
      previous = values[at + 1] as number;
    } else if (written > index) {
      // The clock stepped back: decide as of the start of the window the state was written in.
      lag = written * windowMs - now;
      index = written;
      current = values[at + 1] as number;
      previous = values[at + 2] as number;
    }
  }
  // Whole: `Math.trunc` keeps it a small integer (see `Algorithm`).
  const elapsed = Math.trunc(now + lag - index * windowMs);
  // Usage scaled by W so that the weighted estimate stays an integer.
  const used = previous * (windowMs - elapsed) + current * windowMs;
  const budget = capacity * windowMs;
  into.delayMs = 0;
  if (used + cost * windowMs <= budget) {
    const after = current + cost;
    into.allowed = true;
    into.remaining = Math.floor((budget - used - cost * windowMs) / windowMs);
    into.resetAfterMs = lagged(resetAfter(after, previous, windowMs, elapsed), lag);
    into.retryAfterMs = 0;
    values[at] = index;
    values[at + 1] = after;
    values[at + 2] = previous;
    return;
  }
  refuseInto(into, current, previous, capacity, cost, windowMs, elapsed, lag);
};

// A key without state has no clock lag: a refusal's state, nothing spent, is in the window `now` falls in.
const seed: Algorithm['seed'] = (used, policy, now) => [Math.floor(now / policy.windowMs), used, 0];

/**
 * Sliding window counter (Cloudflare): estimate = previous × (W − elapsed) / W + current.
 * Allowed iff estimate + cost ≤ limit, compared exactly by multiplying through by W.
 * State: `[windowIndex, current, previous]`.
 */
export const slidingWindowCounter: Algorithm = {
  evaluate: evaluateOf(evaluateAt, 3, seed),

  evaluateAt,

  seed,

  refund: (state, policy, _capacity, cost, _now, chargedAt) =>
    refunded(state, Math.floor(chargedAt / policy.windowMs), cost),
};

/**
 * `cost` given back to the count of the window the charge was made in (`charged`): the state's
 * current count, or, once the state has moved on to the next window, its previous one, which
 * the estimate still weighs. No other count held the charge, or still counts.
 */
function refunded(state: State | undefined, charged: number, cost: number): State | undefined {
  if (state === undefined) return state;
  const [written, current, previous] = state as [number, number, number];
  if (written === charged) return [written, Math.max(0, current - cost), previous];
  if (written === charged + 1) return [written, current, Math.max(0, previous - cost)];
  return state;
}

// Apart from `evaluateAt`: a decision that passes, the usual one, then carries none of a
// refusal's bytecode, which would count against what the optimising compiler inlines into it.
function refuseInto(
  into: PolicyOutcome,
  current: number,
  previous: number,
  capacity: number,
  cost: number,
  windowMs: number,
  elapsed: number,
  lag: number,
): void {
  // Computed again, as `evaluateAt` does, rather than passed in: one more argument at its call
  // cost a passing decision some 50 instructions (memory-instructions.ts, 1,844 against 1,895).
  const budget = capacity * windowMs;
  const used = previous * (windowMs - elapsed) + current * windowMs;
  into.allowed = false;
  into.remaining = Math.max(0, Math.floor((budget - used) / windowMs));
  into.resetAfterMs = lagged(resetAfter(current, previous, windowMs, elapsed), lag);
  // The wait runs to the first instant the request would pass. The estimate only falls as
  // time goes on, so look for it in this window first, then in the next (where `current`
  // becomes `previous`).
  const spareNow = (capacity - current - cost) * windowMs;
  if (spareNow >= 0 && previous > 0) {
    const at = windowMs - Math.floor(spareNow / previous);
    if (at < windowMs) {
      into.retryAfterMs = at - elapsed + lag;
      return;
    }
  }
  const spareNext = (capacity - cost) * windowMs;
  const atNext = current > 0 ? Math.max(0, windowMs - Math.floor(spareNext / current)) : 0;
  into.retryAfterMs = windowMs - elapsed + atNext + lag;
}

/** A wait after a clock step back; no wait stays none. */
const lagged = (ms: number, lag: number): number => (ms > 0 ? ms + lag : 0);

const resetAfter = (current: number, previous: number, windowMs: number, elapsed: number): number => {
  if (current > 0) return 2 * windowMs - elapsed;
  if (previous > 0) return windowMs - elapsed;
  return 0;
};
