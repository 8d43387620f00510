import type { Decision, Policy, PolicyDecision } from '../types.js';

/**
 * The decision for a request queue mode would have held when the middleware already holds
 * `maxQueued`: refused with a 429 (SPEC §5), its charge of `cost` given back. `decision` is the
 * one its limiter gave, charged, over `policies`.
 *
 * The store allowed the request with a delay, so nothing in that decision refuses. The queued
 * policies that delayed it (those left with no quota) become the refusing ones, each for that
 * delay, which is when a request of the same cost would pass unqueued: the problem document's
 * `violated-policies`, its detail and `Retry-After` then all say the same. The other policies
 * show their quota with the charge given back, as a refusal never charges.
 */
export function queueFullDecision(decision: Decision, policies: readonly Policy[], cost: number): Decision {
  const waitMs = decision.delayMs;
  let top: PolicyDecision | undefined;
  const list = decision.policies.map((entry, i): PolicyDecision => {
    const policy = policies[i] as Policy;
    if (policy.maxDelayMs > 0 && entry.remaining === 0) {
      const refused = { ...entry, allowed: false, retryAfterMs: waitMs };
      top ??= refused;
      return refused;
    }
    return { ...entry, remaining: Math.min(policy.capacity, entry.remaining + cost) };
  });
  // `overLimit` marks a request that passed; this one does not.
  const { overLimit: _passed, ...rest } = decision;
  const shown = top ?? decision;
  return {
    ...rest,
    allowed: false,
    limit: shown.limit,
    remaining: shown.remaining,
    resetAfterMs: shown.resetAfterMs,
    retryAfterMs: waitMs,
    delayMs: 0,
    policies: list,
  };
}
