import type { AlgorithmName, Policy, PolicyOutcome, StoreReply } from '../types.js';
import type { Algorithms, State } from './algorithm.js';
import { fixedWindow } from './fixed-window.js';
import { gcra } from './gcra.js';
import { leakyBucket } from './leaky-bucket.js';
import { slidingWindowCounter } from './sliding-window-counter.js';
import { slidingWindowLog } from './sliding-window-log.js';
import { tokenBucket } from './token-bucket.js';

export type { Algorithm, Algorithms, Evaluation, State, Values } from './algorithm.js';

/** Soft and elastic throttling raise a capacity at most this many times (1000 % overage). */
const MAX_CAPACITY_FACTOR = 11;

export const algorithms: Algorithms = {
  'token-bucket': tokenBucket,
  'leaky-bucket': leakyBucket,
  gcra,
  'fixed-window': fixedWindow,
  'sliding-window-log': slidingWindowLog,
  'sliding-window-counter': slidingWindowCounter,
};

export const algorithmNames = Object.keys(algorithms) as AlgorithmName[];

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
 * Another version's state, read by `policy` (SPEC §4: state is kept per policy name). The
 * units it has spent as of `now` carry over; a state that has fully reset is fresh. Nothing
 * else is trusted, so a changed limit, window or algorithm never grants a fresh quota, and
 * two versions taking turns admit no more than the larger limit.
 */
export function convertState<S = State>(
  state: S | undefined,
  from: Policy,
  policy: Policy,
  now: number,
  table: Algorithms<S> = algorithms as unknown as Algorithms<S>,
): S | undefined {
  return convertStateWithReset(state, from, policy, now, table)?.state;
}

/**
 * `convertState`, with how long until the state it read has fully reset: while nothing is
 * written, the next read after that finds it fresh, so no wait the converted state gives can
 * be longer (see `capConvertedWaits`).
 */
export function convertStateWithReset<S = State>(
  state: S | undefined,
  from: Policy,
  policy: Policy,
  now: number,
  table: Algorithms<S> = algorithms as unknown as Algorithms<S>,
): { state: S; resetAfterMs: number } | undefined {
  // Evaluated at the largest capacity throttling can give, so that units spent beyond the
  // base capacity (soft or elastic overage, a queue) are counted, not cut off at zero left.
  const ceiling = from.capacity * MAX_CAPACITY_FACTOR;
  const as = table[from.algorithm].evaluate(state, from, ceiling, 0, now);
  if (as.resetAfterMs === 0) return undefined;
  const seeded = table[policy.algorithm].seed(Math.max(1, ceiling - as.remaining), policy, now);
  return { state: seeded, resetAfterMs: as.resetAfterMs };
}

/**
 * Shortens the waits of a decision that charged nothing to when the other versions' states it
 * read have fully reset (`resetsAfterMs[i]`, from `convertStateWithReset`; `undefined` for a
 * policy whose state was its own or none). Such a state stays as the other version left it,
 * so it reads as fresh from then on: a refusal that said to wait longer would send clients
 * away for nothing, and a cache of refusals would refuse what the store then allows.
 */
export function capConvertedWaits(
  outcomes: readonly PolicyOutcome[],
  resetsAfterMs: readonly (number | undefined)[],
): void {
  for (let i = 0; i < outcomes.length; i++) {
    const resetAfterMs = resetsAfterMs[i];
    if (resetAfterMs === undefined) continue;
    const outcome = outcomes[i] as PolicyOutcome;
    outcome.resetAfterMs = Math.min(outcome.resetAfterMs, resetAfterMs);
    if (!outcome.allowed) outcome.retryAfterMs = Math.min(outcome.retryAfterMs, resetAfterMs);
  }
}

/** The states after a refund; `undefined` entries stay fresh. */
export function refundStates<S = State>(
  states: readonly (S | undefined)[],
  policies: readonly Policy[],
  capacities: readonly number[],
  cost: number,
  now: number,
  table: Algorithms<S> = algorithms as unknown as Algorithms<S>,
): (S | undefined)[] {
  return policies.map((policy, i) =>
    table[policy.algorithm].refund(states[i], policy, capacities[i] as number, cost, now),
  );
}
