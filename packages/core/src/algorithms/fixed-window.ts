import { type Algorithm, clockLag, type EvaluateAt, evaluateOf } from './algorithm.js';

/** The decision on the state at `values[at…]`, in place (`Algorithm.evaluateAt`); the algorithm is below. */
const evaluateAt: EvaluateAt = (values, at, fresh, policy, capacity, cost, clock, into) => {
  const windowMs = policy.windowMs;
  const lag = fresh ? 0 : clockLag(values[at] as number, windowMs, clock);
  const now = clock + lag;
  const index = Math.floor(now / windowMs);
  const count = !fresh && values[at] === index ? (values[at + 1] as number) : 0;
  // Whole: `Math.trunc` keeps it a small integer (see `Algorithm`).
  const untilNextWindow = Math.trunc((index + 1) * windowMs - now);
  into.delayMs = 0;
  if (count + cost <= capacity) {
    const used = count + cost;
    into.allowed = true;
    into.remaining = capacity - used;
    into.resetAfterMs = used > 0 ? untilNextWindow + lag : 0;
    into.retryAfterMs = 0;
    values[at] = index;
    values[at + 1] = used;
    return;
  }
  into.allowed = false;
  into.remaining = Math.max(0, capacity - count);
  into.resetAfterMs = count > 0 ? untilNextWindow + lag : 0;
  into.retryAfterMs = untilNextWindow + lag;
};

const seed: Algorithm['seed'] = (used, policy, now) => [Math.floor(now / policy.windowMs), used];

/**
 * Fixed window: one counter per aligned window `floor(now / W)`. State: `[windowIndex, count]`.
 * Up to 2 × limit can pass around a window boundary; that is part of its definition.
 */
export const fixedWindow: Algorithm = {
  evaluate: evaluateOf(evaluateAt, 2, seed),

  evaluateAt,

  seed,

  // Given back to the count of the window the charge was made in, while the state still counts
  // that window: a later window's count never held it.
  refund(state, policy, _capacity, cost, _now, chargedAt) {
    if (state === undefined || state[0] !== Math.floor(chargedAt / policy.windowMs)) return state;
    return [state[0], Math.max(0, (state[1] as number) - cost)];
  },
};
