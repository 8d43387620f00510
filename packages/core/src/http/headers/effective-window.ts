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

/**
 * A held request's decision as it reads once its hold of `heldMs` has ended, for the fields
 * written then: draft-11's figures are generated at response time, and written before the hold
 * they overstated every wait by it. (A limiter that wrote its fields on the request before this
 * one held it keeps its own, as of its decision.)
 */
export function heldFor(decision: Decision, heldMs: number): Decision {
  const aged = (ms: number) => Math.max(0, ms - heldMs);
  return {
    ...decision,
    resetAfterMs: aged(decision.resetAfterMs),
    // A policy's wait too: a shadow rule over its limit states its `retryAfterMs`.
    policies: decision.policies.map((policy) => ({
      ...policy,
      resetAfterMs: aged(policy.resetAfterMs),
      retryAfterMs: aged(policy.retryAfterMs),
    })),
  };
}

/** The figures the single-valued fields (draft-6, draft-7, legacy) report. */
export interface Headline {
  /** The headline policy's capacity: what `remaining` counts down from. */
  limit: number;
  remaining: number;
  waitMs: number;
}

/**
 * The policy the single-valued fields report. On a refusal, the one core put on top of the
 * decision, the refusal that lasts longest, so that the reset agrees with `Retry-After`. A pass
 * reports the policy with the fewest requests left, as draft-6 and draft-7 require ("the time
 * window with the lower RateLimit-Remaining"), on a tie the longer wait: core's top, the policy
 * with the least share left, said 19 of 100 an hour left where 9 of 10 a second were, and the
 * client was refused after 9. `policies` are the limiter's, in the decision's order.
 */
export function headlineOf(decision: Decision, policies: readonly Policy[]): Headline {
  // A cost no wait lets pass (`Infinity`) reports when the policy is restored, as draft-11's
  // `t` does: the fields said a reset 31 million years away.
  const { retryAfterMs } = decision;
  if (retryAfterMs > 0 || decision.policies.length === 1) {
    const waitMs = retryAfterMs > 0 && retryAfterMs !== Number.POSITIVE_INFINITY ? retryAfterMs : decision.resetAfterMs;
    return { limit: headlineCapacity(decision, policies), remaining: decision.remaining, waitMs };
  }
  let fewest = 0;
  for (let i = 1; i < decision.policies.length; i++) {
    const candidate = decision.policies[i] as PolicyDecision;
    const current = decision.policies[fewest] as PolicyDecision;
    if (
      candidate.remaining < current.remaining ||
      (candidate.remaining === current.remaining && candidate.resetAfterMs > current.resetAfterMs)
    )
      fewest = i;
  }
  const entry = decision.policies[fewest] as PolicyDecision;
  return { limit: capacityOf(entry, policies[fewest]), remaining: entry.remaining, waitMs: entry.resetAfterMs };
}

/**
 * A bucket counts `remaining` against its capacity (its `burst`), not its rate: a policy of 20 a
 * second with a burst of 40 may have 39 left. A single-valued field has no room to say both, and
 * a client reads `limit − remaining` as what it used, so the limit it states is the capacity.
 */
function headlineCapacity(decision: Decision, policies: readonly Policy[]): number {
  const i = reportedPolicyIndex(decision);
  const entry = decision.policies[i];
  return entry === undefined ? decision.limit : capacityOf(entry, policies[i]);
}

/** An entry's capacity, from its policy where `policy` is the one it reports. */
const capacityOf = (entry: PolicyDecision, policy: Policy | undefined): number =>
  policy !== undefined && policy.name === entry.name ? policy.capacity : entry.limit;

/**
 * When several limiters answer one request, the single-valued fields keep the most
 * restrictive figures instead of the last limiter's: the fewest requests left, as within one
 * limiter (`headlineOf`), and on a tie the longer wait.
 */
export function isMoreRestrictive(candidate: Headline, current: Headline): boolean {
  return (
    candidate.remaining < current.remaining ||
    (candidate.remaining === current.remaining && candidate.waitMs > current.waitMs)
  );
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
