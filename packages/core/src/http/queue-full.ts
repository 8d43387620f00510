import { refundUnpublished } from '../limiter.js';
import type { Decision, Limiter, Policy, PolicyDecision, RefundOptions } from '../types.js';

/**
 * The decision for a request queue mode would have held when the middleware already holds
 * `maxQueued`: refused with a 429 (SPEC §5), its charge of `cost` given back. `decision` is the
 * one `limiter` gave, charged; the refund is made here, and the refusal built once it is in.
 *
 * The store allowed the request with a delay, so nothing in that decision refuses. The queued
 * policy that delayed it becomes the refusing one, for that delay, which is when a request of
 * the same cost would pass unqueued: the problem document's `violated-policies`, its detail and
 * `Retry-After` then all say the same. Only a queued policy left with no quota can have delayed
 * it; when several are (one may have spent its last unit without a delay), a look at the store
 * after the refund tells them apart: those without room for `cost` now.
 */
export async function queueFull(
  limiter: Limiter,
  key: string,
  decision: Decision,
  cost: number,
  charged: RefundOptions | undefined,
): Promise<Decision> {
  // A refund that fails leaves the charge: the client loses that much quota, nothing worse.
  // Unpublished: the decision goes out as a refusal, which charged nothing in the figures.
  // Dated by the charge (`charged`): a later request's units are never given back instead.
  await refundUnpublished(limiter, key, cost, charged).catch(() => {});
  const { policies } = limiter;
  if (emptiedQueues(decision, policies) < 2) return queueFullDecision(decision, policies, cost);
  const now = await limiter.peek(key).catch(() => undefined);
  const room = now?.reason === undefined ? now?.policies.map((p) => p.remaining) : undefined;
  return queueFullDecision(decision, policies, cost, room);
}

/** Whether the charge left a queued policy with no quota: only such a one can have delayed it. */
const emptiedQueue = (entry: PolicyDecision, policy: Policy): boolean => policy.maxDelayMs > 0 && entry.remaining === 0;

/** How many queued policies the charge left with no quota. */
const emptiedQueues = (decision: Decision, policies: readonly Policy[]): number =>
  decision.policies.filter((entry, i) => emptiedQueue(entry, policies[i] as Policy)).length;

/**
 * `queueFull`'s refusal, from the charged `decision` over `policies` and, when a look after the
 * refund was needed, each policy's quota as it found it (`room`). Without it the other
 * policies show their quota with the charge given back, as a refusal never charges.
 */
export function queueFullDecision(
  decision: Decision,
  policies: readonly Policy[],
  cost: number,
  room?: readonly number[],
): Decision {
  const waitMs = decision.delayMs;
  let top: PolicyDecision | undefined;
  const list = decision.policies.map((entry, i): PolicyDecision => {
    const policy = policies[i] as Policy;
    const remaining = room === undefined ? Math.min(policy.capacity, entry.remaining + cost) : (room[i] as number);
    const delayed = emptiedQueue(entry, policy) && (room === undefined || remaining < cost);
    if (!delayed) return { ...entry, remaining };
    const refused = { ...entry, allowed: false, remaining: room === undefined ? 0 : remaining, retryAfterMs: waitMs };
    top ??= refused;
    return refused;
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
