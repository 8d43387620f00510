import { algorithms } from './algorithms/index.js';
import type { Decision, Policy, PolicyDecision, PolicyOutcome, StoreReply, ThrottleMode } from './types.js';

/**
 * Turns a store's reply into the public Decision: remaining figures against the base limits,
 * the overage mark for soft, elastic and shadow modes, and the policy closest to exhaustion
 * on top. `ceilings` are the largest capacities the throttle gives (`largestCapacities`): a
 * cost beyond this call's capacity but within them may pass at another load (elastic mode).
 */
export function toDecision(
  key: string,
  reply: StoreReply,
  policies: readonly Policy[],
  capacities: readonly number[],
  mode: ThrottleMode,
  cost: number,
  ceilings: readonly number[],
): Decision {
  // Sized up front: a first push grows an empty array to room for 17.
  const list = new Array<PolicyDecision>(policies.length);
  let overage = false;
  let delayMs = 0;
  for (let i = 0; i < policies.length; i++) {
    const policy = policies[i] as Policy;
    const outcome = reply.outcomes[i] as PolicyOutcome;
    const extra = (capacities[i] as number) - policy.capacity;
    if (reply.allowed && outcome.remaining < extra) overage = true;
    if (outcome.delayMs > delayMs) delayMs = outcome.delayMs;
    list[i] = policyDecision(policy, outcome, extra);
  }
  const { allowed } = reply;
  let never = false;
  if (!allowed) {
    for (let i = 0; i < policies.length; i++) {
      if (!neverPasses(policies[i] as Policy, ceilings[i] as number, cost)) continue;
      never = true;
      (list[i] as PolicyDecision).retryAfterMs = Number.POSITIVE_INFINITY;
    }
  }
  const top = allowed ? closestToExhaustion(list, policies) : longestWait(list);
  return settle(decisionOf(key, allowed, top, mode === 'shadow' ? 0 : delayMs, list), overage, never, mode);
}

/**
 * `toDecision` for a one-policy limiter, whose outcome is the whole reply: the same Decision
 * without the list work (the single-policy fast path; a property test holds the two equal).
 */
export function oneDecision(
  key: string,
  outcome: PolicyOutcome,
  policy: Policy,
  capacity: number,
  mode: ThrottleMode,
  cost: number,
  ceiling: number,
): Decision {
  // Compared, not read as a condition: the optimising compiler knows nothing of the field's
  // type, and would test it as any value (some 12 instructions) at each of its three uses.
  const allowed = outcome.allowed === true;
  const extra = capacity - policy.capacity;
  const remaining = Math.max(0, outcome.remaining - extra);
  // `policyDecision` and `decisionOf` written out: on every one-policy decision, past the JIT's
  // inlining budget, the two calls cost about 400 instructions. Same fields in the same order,
  // so the same hidden classes.
  const entry: PolicyDecision = {
    name: policy.name,
    limit: policy.limit,
    windowMs: policy.windowMs,
    remaining,
    resetAfterMs: outcome.resetAfterMs,
    retryAfterMs: outcome.retryAfterMs,
    allowed,
  };
  const decision: Decision = {
    allowed,
    limit: policy.limit,
    remaining,
    resetAfterMs: outcome.resetAfterMs,
    retryAfterMs: allowed ? 0 : outcome.retryAfterMs,
    delayMs: allowed && mode !== 'shadow' ? outcome.delayMs : 0,
    policies: [entry],
    key,
  };
  // Allowed within the base capacity, the usual case: nothing to mark.
  if (allowed && outcome.remaining >= extra) return decision;
  const never = !allowed && neverPasses(policy, ceiling, cost);
  if (never) entry.retryAfterMs = Number.POSITIVE_INFINITY;
  return settle(decision, allowed, never, mode);
}

/** One policy's entry in `Decision.policies`: `extra` is the overage the effective capacity adds. */
const policyDecision = (policy: Policy, outcome: PolicyOutcome, extra: number): PolicyDecision => ({
  name: policy.name,
  limit: policy.limit,
  windowMs: policy.windowMs,
  remaining: Math.max(0, outcome.remaining - extra),
  resetAfterMs: outcome.resetAfterMs,
  retryAfterMs: outcome.retryAfterMs,
  allowed: outcome.allowed,
});

const decisionOf = (
  key: string,
  allowed: boolean,
  top: PolicyDecision,
  delayMs: number,
  policies: PolicyDecision[],
): Decision => ({
  allowed,
  limit: top.limit,
  remaining: top.remaining,
  resetAfterMs: top.resetAfterMs,
  retryAfterMs: allowed ? 0 : top.retryAfterMs,
  delayMs: allowed ? delayMs : 0,
  policies,
  key,
});

/**
 * Marks what the store's verdict alone does not say: a pass into the soft or elastic overage,
 * a cost that can never pass (whose policies' waits the caller made `Infinity` already), and
 * shadow mode's pass of a refused request. (Shadow mode holds back no request a queue took
 * either: the callers give its decisions no `delayMs`.)
 */
function settle(decision: Decision, overage: boolean, never: boolean, mode: ThrottleMode): Decision {
  if (overage && (mode === 'soft' || mode === 'elastic')) decision.overLimit = mode;
  if (!decision.allowed) {
    if (never) {
      decision.reason = 'cost-exceeds-limit';
      decision.retryAfterMs = Number.POSITIVE_INFINITY;
    }
    if (mode === 'shadow') passInShadow(decision);
  }
  return decision;
}

/** Shadow mode's pass of a refused decision: its figures still say what was refused. */
function passInShadow(decision: Decision): void {
  decision.allowed = true;
  decision.retryAfterMs = 0;
  decision.overLimit = 'shadow';
}

/**
 * `decision`, made on `reply`, with the mark the store set (`StoreReply.overLimit`, as a
 * decision service whose rules throttle sets it): a refusal the store let through passes as in
 * shadow mode, and a pass carries the store's mark unless the limiter's own throttle marked it.
 */
export function markedByStore(decision: Decision, reply: StoreReply): Decision {
  const mark = reply.overLimit;
  if (mark === undefined) return decision;
  if (!decision.allowed) {
    if (mark === 'shadow') passInShadow(decision);
  } else decision.overLimit ??= mark;
  return decision;
}

/**
 * Lowest share of capacity left; on a tie, the one that takes longest to restore. Capacity,
 * not limit: a bucket whose burst exceeds its limit can hold more than `limit` units.
 */
function closestToExhaustion(list: PolicyDecision[], policies: readonly Policy[]): PolicyDecision {
  let best = 0;
  for (let i = 1; i < list.length; i++) {
    const candidate = list[i] as PolicyDecision;
    const current = list[best] as PolicyDecision;
    const a = candidate.remaining * (policies[best] as Policy).capacity;
    const b = current.remaining * (policies[i] as Policy).capacity;
    if (a < b || (a === b && candidate.resetAfterMs > current.resetAfterMs)) best = i;
  }
  return list[best] as PolicyDecision;
}

/** Among the policies that refused, the one whose refusal lasts longest decides the wait. */
function longestWait(list: PolicyDecision[]): PolicyDecision {
  let worst: PolicyDecision | undefined;
  for (const candidate of list) {
    if (!candidate.allowed && (worst === undefined || candidate.retryAfterMs > worst.retryAfterMs)) worst = candidate;
  }
  return worst ?? (list[0] as PolicyDecision);
}

/**
 * The index in `decision.policies` of the entry whose figures the decision's top-level fields
 * report (the same limit, remaining and reset), or -1 when none has them.
 */
export function reportedPolicyIndex(decision: Decision): number {
  const list = decision.policies;
  for (let i = 0; i < list.length; i++) {
    const p = list[i] as PolicyDecision;
    if (p.limit === decision.limit && p.remaining === decision.remaining && p.resetAfterMs === decision.resetAfterMs) {
      return i;
    }
  }
  return -1;
}

/**
 * A request that even a fresh state refuses can never pass: it is told so instead of a wait.
 * A fresh state passes any cost up to the capacity under every algorithm, so only a larger
 * one is tried: a refusal then costs no second evaluation.
 */
export const neverPasses = (policy: Policy, capacity: number, cost: number): boolean =>
  cost > capacity && !algorithms[policy.algorithm].evaluate(undefined, policy, capacity, cost, 0).allowed;

/** The decision when the store could not decide and the fail policy lets the request through or not. */
export function storeUnavailableDecision(
  key: string,
  policies: readonly Policy[],
  allowed: boolean,
  retryAfterMs: number,
): Decision {
  const list = policies.map((policy) => ({
    name: policy.name,
    limit: policy.limit,
    windowMs: policy.windowMs,
    remaining: allowed ? policy.capacity : 0,
    resetAfterMs: 0,
    retryAfterMs: allowed ? 0 : retryAfterMs,
    allowed,
  }));
  const top = list[0] as PolicyDecision;
  return {
    allowed,
    limit: top.limit,
    remaining: top.remaining,
    resetAfterMs: 0,
    retryAfterMs: top.retryAfterMs,
    delayMs: 0,
    policies: list,
    reason: 'store-unavailable',
    key,
  };
}

/**
 * Whether an allowed decision spent quota, and so is what a refund gives back: not one the
 * fail policy let through (the store charged nothing), nor shadow mode's over the limit.
 */
export const spentQuota = (decision: Decision): boolean =>
  decision.reason === undefined && decision.overLimit !== 'shadow';

/** Whether `value` is one of the marks a decision's `overLimit` may carry. */
export const isOverLimitMark = (value: unknown): value is NonNullable<Decision['overLimit']> =>
  value === 'soft' || value === 'elastic' || value === 'shadow';
