import { reportedPolicyIndex } from '../../decision.js';
import type { Decision, Policy, PolicyDecision } from '../../types.js';

/**
 * The wait behind a policy's figures: until it is fully restored when it allowed, until a
 * request of the same cost would pass when it refused, or until it is restored when no wait
 * would let that cost pass (`Infinity`). It becomes draft-11's `t`, the draft-6/7 `reset` and,
 * on a 429, the floor of `Retry-After`.
 */
export function effectiveWindowMs(policy: PolicyDecision): number {
  return policy.allowed || policy.retryAfterMs === Number.POSITIVE_INFINITY ? policy.resetAfterMs : policy.retryAfterMs;
}

/** The figures the single-valued fields (draft-6, draft-7, legacy) report. */
export interface Headline {
  /** The headline policy's capacity: what `remaining` counts down from. */
  limit: number;
  remaining: number;
  waitMs: number;
}

/**
 * The policy core put on top of the decision: the closest to exhaustion, or the refusal that
 * lasts longest. `policies` are the limiter's, in the decision's order.
 */
export function headlineOf(decision: Decision, policies: readonly Policy[]): Headline {
  // A cost no wait lets pass (`Infinity`) reports when the policy is restored, as draft-11's
  // `t` does: the fields said a reset 31 million years away.
  const { retryAfterMs } = decision;
  const waitMs = retryAfterMs > 0 && retryAfterMs !== Number.POSITIVE_INFINITY ? retryAfterMs : decision.resetAfterMs;
  return { limit: headlineCapacity(decision, policies), remaining: decision.remaining, waitMs };
}

/**
 * A bucket counts `remaining` against its capacity (its `burst`), not its rate: a policy of 20 a
 * second with a burst of 40 may have 39 left. A single-valued field has no room to say both, and
 * a client reads `limit − remaining` as what it used, so the limit it states is the capacity.
 */
function headlineCapacity(decision: Decision, policies: readonly Policy[]): number {
  const i = reportedPolicyIndex(decision);
  const policy = policies[i];
  return policy !== undefined && policy.name === decision.policies[i]?.name ? policy.capacity : decision.limit;
}

/**
 * When several limiters answer one request, the single-valued fields keep the most
 * restrictive figures instead of the last limiter's: the lowest share of quota left, and on a
 * tie the longer wait.
 */
export function isMoreRestrictive(candidate: Headline, current: Headline): boolean {
  const a = candidate.remaining * current.limit;
  const b = current.remaining * candidate.limit;
  return a < b || (a === b && candidate.waitMs > current.waitMs);
}

/**
 * By refused decision: the `Retry-After` of its response, where a limiter the request passed
 * before raised it above the decision's own wait. Decisions are fresh on every call. Looked at
 * only once a wait has been raised: most apps never raise one.
 */
const raisedWaits = new WeakMap<Decision, number>();
let raisedAny = false;

/**
 * The wait to note for the limiters after this one on a request (`RequestWaits`): the longest
 * of the policies this allowed decision reports with no quota left, 0 for none. The top-level
 * `remaining` is the policy closest to exhaustion, so it is 0 whenever any policy's is.
 */
export function spentWaitMs(decision: Decision): number {
  if (decision.remaining !== 0) return 0;
  let waitMs = 0;
  for (const policy of decision.policies) {
    if (policy.remaining === 0) waitMs = Math.max(waitMs, effectiveWindowMs(policy));
  }
  return waitMs;
}

/**
 * `Retry-After` for a refused request: the decision's own wait, and never earlier than the
 * effective window of any policy that reports no quota left (draft-11 §6), its own or one a
 * limiter the request passed before reported (`spentBeforeMs`, see `RequestWaits`).
 * `undefined` when the request can never pass (`reason: 'cost-exceeds-limit'`): no wait would
 * help.
 */
export function retryAfterMs(decision: Decision, spentBeforeMs = 0): number | undefined {
  if (decision.retryAfterMs === Number.POSITIVE_INFINITY) return undefined;
  let waitMs = decision.retryAfterMs;
  for (const policy of decision.policies) {
    if (policy.remaining === 0 || !policy.allowed) waitMs = Math.max(waitMs, effectiveWindowMs(policy));
  }
  if (spentBeforeMs <= waitMs) return waitMs;
  raisedAny = true;
  raisedWaits.set(decision, spentBeforeMs);
  return spentBeforeMs;
}

/** The wait a refusal states, as its `Retry-After` does: raised by a limiter before it, or its own. */
export function statedWaitMs(decision: Decision): number | undefined {
  return (raisedAny ? raisedWaits.get(decision) : undefined) ?? retryAfterMs(decision);
}
