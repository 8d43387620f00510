import { algorithms } from './algorithms/index.js';
import type { Decision, Policy, PolicyDecision, PolicyOutcome, StoreReply, ThrottleMode } from './types.js';

/**
 * Turns a store's reply into the public Decision: remaining figures against the base limits,
 * the overage mark for soft, elastic and shadow modes, and the policy closest to exhaustion
 * on top.
 */
export function toDecision(
  key: string,
  reply: StoreReply,
  policies: readonly Policy[],
  capacities: readonly number[],
  mode: ThrottleMode,
  cost: number,
): Decision {
  const list: PolicyDecision[] = [];
  let overage = false;
  let delayMs = 0;
  for (let i = 0; i < policies.length; i++) {
    const policy = policies[i] as Policy;
    const outcome = reply.outcomes[i] as PolicyOutcome;
    const extra = (capacities[i] as number) - policy.capacity;
    if (reply.allowed && outcome.remaining < extra) overage = true;
    if (outcome.delayMs > delayMs) delayMs = outcome.delayMs;
    list.push({
      name: policy.name,
      limit: policy.limit,
      windowMs: policy.windowMs,
      remaining: Math.max(0, outcome.remaining - extra),
      resetAfterMs: outcome.resetAfterMs,
      retryAfterMs: outcome.retryAfterMs,
      allowed: outcome.allowed,
    });
  }
  const top = reply.allowed ? closestToExhaustion(list, policies) : longestWait(list);
  const decision: Decision = {
    allowed: reply.allowed,
    limit: top.limit,
    remaining: top.remaining,
    resetAfterMs: top.resetAfterMs,
    retryAfterMs: reply.allowed ? 0 : top.retryAfterMs,
    delayMs: reply.allowed ? delayMs : 0,
    policies: list,
    key,
  };
  if (overage && (mode === 'soft' || mode === 'elastic')) decision.overLimit = mode;
  if (!reply.allowed) {
    if (neverPasses(policies, capacities, cost)) {
      decision.reason = 'cost-exceeds-limit';
      decision.retryAfterMs = Number.POSITIVE_INFINITY;
    }
    if (mode === 'shadow') {
      decision.allowed = true;
      decision.retryAfterMs = 0;
      decision.overLimit = 'shadow';
    }
  }
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

/** A request that even a fresh state refuses can never pass: it is told so instead of a wait. */
function neverPasses(policies: readonly Policy[], capacities: readonly number[], cost: number): boolean {
  return policies.some(
    (policy, i) => !algorithms[policy.algorithm].evaluate(undefined, policy, capacities[i] as number, cost, 0).allowed,
  );
}

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
