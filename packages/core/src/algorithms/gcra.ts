import { type Algorithm, ceilDiv, type EvaluateAt, evaluateOf, floorDiv, type State } from './algorithm.js';

/** The decision on the state at `values[at…]`, in place (`Algorithm.evaluateAt`); the algorithm is below. */
const evaluateAt: EvaluateAt = (values, at, fresh, policy, capacity, cost, now, into) => {
  const { windowMs, limit } = policy;
  const ahead = fresh ? 0 : aheadOf(values[at] as number, values[at + 1] as number, limit, now);
  const nextAhead = ahead + cost * windowMs;
  const late = nextAhead - capacity * windowMs;
  if (late <= policy.maxDelayMs * limit) {
    into.allowed = true;
    into.remaining = Math.max(0, floorDiv(-late, windowMs));
    into.resetAfterMs = ceilDiv(nextAhead, limit);
    into.retryAfterMs = 0;
    into.delayMs = late > 0 ? ceilDiv(late, limit) : 0;
    values[at] = now + floorDiv(nextAhead, limit);
    values[at + 1] = nextAhead % limit;
    return;
  }
  into.allowed = false;
  into.remaining = Math.max(0, floorDiv(capacity * windowMs - ahead, windowMs));
  into.resetAfterMs = ceilDiv(ahead, limit);
  into.retryAfterMs = ceilDiv(late - policy.maxDelayMs * limit, limit);
  into.delayMs = 0;
};

/** The state whose TAT lies `ahead` of `now`, in units of 1/L ms. */
const stateAhead = (ahead: number, limit: number, now: number): State => [now + floorDiv(ahead, limit), ahead % limit];

const seed: Algorithm['seed'] = (used, { windowMs, limit }, now) => stateAhead(used * windowMs, limit, now);

/**
 * Generic cell rate algorithm. The emission interval is T = W / L ms, which is rarely whole,
 * so the theoretical arrival time is kept exactly as `tatMs + tatFraction / L`.
 * State: `[tatMs, tatFraction]` with 0 ≤ tatFraction < L.
 *
 * In units of 1/L ms, a cost c advances the TAT by c × W and the tolerance is capacity × W:
 * allowed iff max(TAT, now) + c·T − τ ≤ now (+ maxDelayMs in queue mode).
 */
export const gcra: Algorithm = {
  evaluate: evaluateOf(evaluateAt, 2, seed),

  evaluateAt,

  seed,

  refund(state, policy, _capacity, cost, now) {
    const { windowMs, limit } = policy;
    const held = state === undefined ? 0 : aheadOf(state[0] as number, state[1] as number, limit, now);
    return stateAhead(Math.max(0, held - cost * windowMs), limit, now);
  },
};

/** How far the TAT (`tatMs` and its fraction) lies ahead of `now`, in units of 1/L ms; 0 once it has passed. */
function aheadOf(tatMs: number, fraction: number, limit: number, now: number): number {
  if (tatMs < now) return 0;
  return (tatMs - now) * limit + fraction;
}
