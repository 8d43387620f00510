import { MAX_CAPACITY_FACTOR } from '../throttle.js';
import type { Policy, PolicyOutcome } from '../types.js';
import type { Algorithms, State } from './algorithm.js';
import { algorithms } from './table.js';

/** Another version's state as a policy reads it (`convertStateWithReset`). */
export interface ConvertedState<S = State> {
  /** In the reading policy's shape: the units spent as of the read, as if spent just then. */
  readonly state: S;
  /** How long until the state read has fully reset: it reads as fresh from then on. */
  readonly resetAfterMs: number;
  /** The state as the other version wrote it, and that version's policy. */
  readonly written: S;
  readonly writtenBy: Policy;
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
 * `convertState`, with what a decision that charges nothing needs for its waits
 * (`settleConvertedWaits`): how long until the state read has fully reset, and that state.
 * `undefined` when it already has.
 */
export function convertStateWithReset<S = State>(
  state: S | undefined,
  from: Policy,
  policy: Policy,
  now: number,
  table: Algorithms<S> = algorithms as unknown as Algorithms<S>,
): ConvertedState<S> | undefined {
  const ceiling = ceilingOf(from);
  const as = table[from.algorithm].evaluate(state, from, ceiling, 0, now);
  if (as.resetAfterMs === 0 || state === undefined) return undefined;
  const seeded = table[policy.algorithm].seed(Math.max(1, ceiling - as.remaining), policy, now);
  return { state: seeded, resetAfterMs: as.resetAfterMs, written: state, writtenBy: from };
}

/**
 * The waits of a decision that charged nothing, for each policy whose state was another
 * version's (`converted[i]`; `undefined` for a policy whose state was its own or none). Such a
 * state stays as the other version left it, and each later read converts the units it has
 * spent by then. So the quota is fully restored when that state has reset, and a refused cost
 * passes once it has spent few enough units for this policy to admit the cost on top, or, if
 * only a fresh state admits it, once it has reset. The waits the converted state gave were
 * this policy's own shape's: too short, sending clients back to be refused again, or too
 * long, while the store already admitted them (and a cache of refusals kept refusing).
 */
export function settleConvertedWaits<S = State>(
  outcomes: readonly PolicyOutcome[],
  converted: readonly (ConvertedState<S> | undefined)[],
  policies: readonly Policy[],
  capacities: readonly number[],
  cost: number,
  now: number,
  table: Algorithms<S> = algorithms as unknown as Algorithms<S>,
): void {
  for (let i = 0; i < outcomes.length; i++) {
    const read = converted[i];
    if (read === undefined) continue;
    const outcome = outcomes[i] as PolicyOutcome;
    outcome.resetAfterMs = read.resetAfterMs;
    if (outcome.allowed) continue;
    const most = mostSpentAdmitting(policies[i] as Policy, capacities[i] as number, cost, now, table);
    outcome.retryAfterMs =
      most === 0 ? read.resetAfterMs : freedAfterMs(read, ceilingOf(read.writtenBy) - most, now, table);
  }
}

/** The largest capacity throttling can give: units spent beyond the base one (soft or elastic overage, a queue) still count. */
const ceilingOf = (policy: Policy): number => policy.capacity * MAX_CAPACITY_FACTOR;

/**
 * The most units a converted state may hold for `policy` still to admit `cost`, 0 if none (a
 * converted state holds at least one). Admission only falls as the units grow. Without a
 * queue it is `capacity − cost`, which two evaluations confirm; else the search steps up from
 * there by doubling, or down, then halves the gap.
 */
function mostSpentAdmitting<S>(
  policy: Policy,
  capacity: number,
  cost: number,
  now: number,
  table: Algorithms<S>,
): number {
  const algorithm = table[policy.algorithm];
  const admits = (used: number) =>
    algorithm.evaluate(algorithm.seed(used, policy, now), policy, capacity, cost, now).allowed;
  let most = Math.max(1, Math.floor(capacity - cost));
  let refused: number;
  if (admits(most)) {
    let step = 1;
    while (admits(most + step)) [most, step] = [most + step, step * 2];
    refused = most + step;
  } else {
    if (most === 1 || !admits(1)) return 0;
    refused = most;
    most = 1;
  }
  while (refused - most > 1) {
    const middle = Math.floor((most + refused) / 2);
    if (admits(middle)) most = middle;
    else refused = middle;
  }
  return most;
}

/**
 * How long until the state read has `free` units free at its ceiling, as its own algorithm
 * counts them down; a queue would let a cost through early, so none is asked for. Never past
 * the state's reset, after which it reads as fresh.
 */
function freedAfterMs<S>(read: ConvertedState<S>, free: number, now: number, table: Algorithms<S>): number {
  const from = read.writtenBy.maxDelayMs === 0 ? read.writtenBy : { ...read.writtenBy, maxDelayMs: 0 };
  const asked = table[from.algorithm].evaluate(read.written, from, ceilingOf(from), free, now);
  return asked.allowed ? 0 : Math.min(asked.retryAfterMs, read.resetAfterMs);
}
