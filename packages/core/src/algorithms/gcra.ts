import { type Algorithm, ceilDiv, floorDiv } from './algorithm.js';

/**
 * Generic cell rate algorithm. The emission interval is T = W / L ms, which is rarely whole,
 * so the theoretical arrival time is kept exactly as `tatMs + tatFraction / L`.
 * State: `[tatMs, tatFraction]` with 0 ≤ tatFraction < L.
 *
 * In units of 1/L ms, a cost c advances the TAT by c × W and the tolerance is capacity × W:
 * allowed iff max(TAT, now) + c·T − τ ≤ now (+ maxDelayMs in queue mode).
 */
export const gcra: Algorithm = {
  evaluate(state, policy, capacity, cost, now) {
    const { windowMs, limit } = policy;
    const ahead = aheadOfNow(state, limit, now);
    const nextAhead = ahead + cost * windowMs;
    const late = nextAhead - capacity * windowMs;
    if (late <= policy.maxDelayMs * limit) {
      return {
        allowed: true,
        remaining: Math.max(0, floorDiv(-late, windowMs)),
        resetAfterMs: ceilDiv(nextAhead, limit),
        retryAfterMs: 0,
        delayMs: late > 0 ? ceilDiv(late, limit) : 0,
        next: [now + floorDiv(nextAhead, limit), nextAhead % limit],
      };
    }
    return {
      allowed: false,
      remaining: Math.max(0, floorDiv(capacity * windowMs - ahead, windowMs)),
      resetAfterMs: ceilDiv(ahead, limit),
      retryAfterMs: ceilDiv(late - policy.maxDelayMs * limit, limit),
      delayMs: 0,
      next: state ?? [now, 0],
    };
  },

  seed(used, { windowMs, limit }, now) {
    const ahead = used * windowMs;
    return [now + floorDiv(ahead, limit), ahead % limit];
  },

  refund(state, policy, _capacity, cost, now) {
    const { windowMs, limit } = policy;
    const ahead = Math.max(0, aheadOfNow(state, limit, now) - cost * windowMs);
    return [now + floorDiv(ahead, limit), ahead % limit];
  },
};

/** How far the TAT lies ahead of `now`, in units of 1/L ms; 0 once it has passed. */
function aheadOfNow(state: readonly number[] | undefined, limit: number, now: number): number {
  if (state === undefined) return 0;
  const tatMs = state[0] as number;
  if (tatMs < now) return 0;
  return (tatMs - now) * limit + (state[1] as number);
}
