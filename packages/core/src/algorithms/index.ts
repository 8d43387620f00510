import type { ChargeTime } from '../refund-charge.js';
import type { Policy, PolicyOutcome, StoreReply } from '../types.js';
import type { Algorithms, State } from './algorithm.js';
import { algorithms } from './table.js';

export type { Algorithm, Algorithms, Evaluation, State, Values } from './algorithm.js';
export type { ConvertedState } from './convert.js';
export { convertState, convertStateWithReset, settleConvertedWaits } from './convert.js';
export { algorithmNames, algorithms } from './table.js';

/**
 * One all-or-nothing decision over several policies: every policy is evaluated on the
 * current state; only when all allow (and the cost is positive) are the new states returned
 * for storing. This is the reference every store must match; a store keeping states of its own
 * shape passes its own `table` of algorithms that decide as the reference ones do.
 */
export function decide<S = State>(
  states: readonly (S | undefined)[],
  policies: readonly Policy[],
  capacities: readonly number[],
  cost: number,
  now: number,
  table: Algorithms<S> = algorithms as unknown as Algorithms<S>,
): StoreReply & { next: S[] | undefined } {
  // Sized up front: a first push grows an empty array to room for 17, some 85 instructions an array.
  const outcomes = new Array<PolicyOutcome>(policies.length);
  const next = new Array<S>(policies.length);
  let allowed = true;
  for (let i = 0; i < policies.length; i++) {
    const policy = policies[i] as Policy;
    const evaluation = table[policy.algorithm].evaluate(states[i], policy, capacities[i] as number, cost, now);
    allowed &&= evaluation.allowed;
    next[i] = evaluation.next;
    outcomes[i] = {
      allowed: evaluation.allowed,
      remaining: evaluation.remaining,
      resetAfterMs: evaluation.resetAfterMs,
      retryAfterMs: evaluation.retryAfterMs,
      delayMs: evaluation.delayMs,
    };
  }
  if (!allowed && cost > 0) {
    // Nothing was charged, so a policy that would have allowed reports its quota as it stands,
    // not as it would have been after a charge that never happened.
    for (let i = 0; i < policies.length; i++) {
      const outcome = outcomes[i] as PolicyOutcome;
      if (!outcome.allowed) continue;
      const policy = policies[i] as Policy;
      const current = table[policy.algorithm].evaluate(states[i], policy, capacities[i] as number, 0, now);
      outcome.remaining = current.remaining;
      outcome.resetAfterMs = current.resetAfterMs;
      outcome.delayMs = 0;
    }
  }
  return { allowed, now, outcomes, next: allowed && cost > 0 ? next : undefined };
}

/**
 * The states after a refund of a charge made at `charge` (`chargeOf`). A policy whose
 * state was `undefined` (fresh) stays so, and when the refund brings every policy back to fresh,
 * every entry is `undefined`: the store drops the client. A fresh state kept as of `now` would
 * read as spent if the clock then stepped back.
 */
export function refundStates<S = State>(
  states: readonly (S | undefined)[],
  policies: readonly Policy[],
  capacities: readonly number[],
  cost: number,
  now: number,
  charge: ChargeTime,
  table: Algorithms<S> = algorithms as unknown as Algorithms<S>,
): (S | undefined)[] {
  const refunded = policies.map((policy, i) =>
    states[i] === undefined
      ? undefined
      : table[policy.algorithm].refund(states[i], policy, capacities[i] as number, cost, now, charge.at, charge.by),
  );
  const { outcomes } = decide(refunded, policies, capacities, 0, now, table);
  return outcomes.every((outcome) => outcome.resetAfterMs === 0) ? policies.map(() => undefined) : refunded;
}
