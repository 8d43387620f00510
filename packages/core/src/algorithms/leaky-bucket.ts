import { type Algorithm, ceilDiv, floorDiv } from './algorithm.js';

/**
 * Leaky bucket as a meter (nginx `limit_req` style). One token is W units of water; the
 * bucket drains L units per ms, so every figure stays an integer. State: `[level, lastMs]`.
 * Allowed iff level + cost × W ≤ capacity × W. With a queue, a request may overflow by up to
 * `maxDelayMs` of draining: it is charged now and held until the water below it has drained.
 */
export const leakyBucket: Algorithm = {
  evaluate(state, policy, capacity, cost, now) {
    const { windowMs, limit } = policy;
    const level = levelAt(state, limit, now);
    const after = level + cost * windowMs;
    const overflow = after - capacity * windowMs;
    if (overflow <= policy.maxDelayMs * limit) {
      return {
        allowed: true,
        remaining: Math.max(0, floorDiv(-overflow, windowMs)),
        resetAfterMs: ceilDiv(after, limit),
        retryAfterMs: 0,
        delayMs: overflow > 0 ? ceilDiv(overflow, limit) : 0,
        next: [after, now],
      };
    }
    return {
      allowed: false,
      remaining: Math.max(0, floorDiv(capacity * windowMs - level, windowMs)),
      resetAfterMs: ceilDiv(level, limit),
      retryAfterMs: ceilDiv(overflow - policy.maxDelayMs * limit, limit),
      delayMs: 0,
      next: [level, now],
    };
  },

  seed: (used, policy, now) => [used * policy.windowMs, now],

  refund(state, policy, _capacity, cost, now) {
    const level = levelAt(state, policy.limit, now);
    return [Math.max(0, level - cost * policy.windowMs), now];
  },
};

/** The level drained to `now`; the multiplication only happens while it cannot overflow. */
function levelAt(state: readonly number[] | undefined, limit: number, now: number): number {
  if (state === undefined) return 0;
  const level = state[0] as number;
  const elapsed = now - (state[1] as number);
  if (elapsed <= 0) return level;
  return elapsed >= ceilDiv(level, limit) ? 0 : level - elapsed * limit;
}
