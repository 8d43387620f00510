import type { Policy } from '../types.js';
import { type Algorithm, ceilDiv, floorDiv, type Reused, type State } from './algorithm.js';

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
    const into = { allowed: false, remaining: 0, resetAfterMs: 0, retryAfterMs: 0, delayMs: 0, next: [0, 0] as State };
    evaluateInto(state, policy, capacity, cost, now, into as Reused);
    if (!into.allowed) into.next = state ?? [now, 0];
    return into;
  },

  evaluateInto,

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

function evaluateInto(
  state: State | undefined,
  policy: Policy,
  capacity: number,
  cost: number,
  now: number,
  into: Reused,
): void {
  const { windowMs, limit } = policy;
  const ahead = aheadOfNow(state, limit, now);
  const nextAhead = ahead + cost * windowMs;
  const late = nextAhead - capacity * windowMs;
  if (late <= policy.maxDelayMs * limit) {
    into.allowed = true;
    into.remaining = Math.max(0, floorDiv(-late, windowMs));
    into.resetAfterMs = ceilDiv(nextAhead, limit);
    into.retryAfterMs = 0;
    into.delayMs = late > 0 ? ceilDiv(late, limit) : 0;
    into.next[0] = now + floorDiv(nextAhead, limit);
    into.next[1] = nextAhead % limit;
    return;
  }
  into.allowed = false;
  into.remaining = Math.max(0, floorDiv(capacity * windowMs - ahead, windowMs));
  into.resetAfterMs = ceilDiv(ahead, limit);
  into.retryAfterMs = ceilDiv(late - policy.maxDelayMs * limit, limit);
  into.delayMs = 0;
}

/** How far the TAT lies ahead of `now`, in units of 1/L ms; 0 once it has passed. */
function aheadOfNow(state: readonly number[] | undefined, limit: number, now: number): number {
  if (state === undefined) return 0;
  const tatMs = state[0] as number;
  if (tatMs < now) return 0;
  return (tatMs - now) * limit + (state[1] as number);
}
