import type { AlgorithmName, Policy, PolicyOutcome } from '../types.js';

/**
 * A store keeps one state per (client key, policy): a short list of integers whose layout
 * belongs to the algorithm. `undefined` is the fresh state of a key never seen.
 */
export type State = readonly number[];

export interface Evaluation<S = State> extends PolicyOutcome {
  /** The state to store if every policy of the decision allows (it is ignored otherwise). */
  next: S;
}

/**
 * Numbers a state sits among, which an algorithm decides on in place (`evaluateAt`): a memory
 * table's rows, a local-first client's view.
 */
export type Values = Float64Array | number[];

/** `Algorithm.evaluateAt`. */
export type EvaluateAt = (
  values: Values,
  at: number,
  fresh: boolean,
  policy: Policy,
  capacity: number,
  cost: number,
  now: number,
  into: PolicyOutcome,
) => void;

/**
 * A pure reference implementation of one algorithm. The memory store runs it; each Redis
 * script mirrors it line for line, and the conformance suite proves they agree.
 *
 * `capacity` is the effective capacity (soft and elastic throttling raise it above
 * `policy.capacity`); `now` is integer epoch ms. A store may keep a state of its own shape `S`
 * with an algorithm that decides exactly as the reference does (the memory store's log).
 *
 * Every figure is a non-negative whole number below 2^53, which validation guarantees, so
 * `Math.floor(a / b)` and `Math.ceil(a / b)` divide exactly. They are written out, not shared
 * as helpers: the optimising compiler checks an imported binding on every call, and a gcra
 * decision's three divisions through helpers cost some 10 instructions more.
 *
 * A wait or reset counted back from `now` is a whole number, but the interpreter gives the
 * difference of two large numbers (a time and `now`) as a boxed number even when it is small.
 * Stored once in an outcome, a boxed number turns that field into a boxed one in every outcome
 * and decision after, of every algorithm: two allocations a decision. `Math.trunc` of it, a
 * whole number already, hands it on as a small integer.
 */
export interface Algorithm<S = State> {
  evaluate(state: S | undefined, policy: Policy, capacity: number, cost: number, now: number): Evaluation<S>;
  /**
   * For a state of fixed size, optional: `evaluate` on the state held at `values[at…]`, in
   * place and allocating nothing, for the memory store's one-policy path. Writes the outcome
   * into `into`, and when allowed the next state over the one it read; a refusal leaves
   * `values` as they were. `fresh`: the key has no state, and `values` are not read. The
   * algorithm's `evaluate` is made of it, so the two never differ.
   */
  evaluateAt?: EvaluateAt;
  /**
   * The state after giving back what remains of a charge of `cost` units made at `chargedAt`
   * or later, by `chargedBy` (at or before `now`), never beyond a fresh state: a window's count
   * only while the state still counts the charge's window, a bucket's units less what has
   * refilled since, a log's newest entries logged by `chargedBy`. A later request's charge is
   * never given back in its place, but for a log's entry logged within the span.
   */
  refund(
    state: S | undefined,
    policy: Policy,
    capacity: number,
    cost: number,
    now: number,
    chargedAt: number,
    chargedBy: number,
  ): S | undefined;
  /**
   * A state with `used` units spent at `now` and nothing else known: how a policy takes over
   * from another version of itself (another limit, window or algorithm) without a fresh quota.
   */
  seed(used: number, policy: Policy, now: number): S;
}

/** One algorithm per name, over states of shape `S`. */
export type Algorithms<S = State> = Readonly<Record<AlgorithmName, Algorithm<S>>>;

/**
 * How far the clock stands behind the window a window algorithm's state was written in
 * (`index`, that window's); 0 unless the clock stepped back. The algorithm then decides as
 * of that window's start, and adds the lag to its waits: a step back never reopens a window
 * already counted, so it never admits more.
 */
export const clockLag = (index: number, windowMs: number, now: number): number => Math.max(0, index * windowMs - now);

/** Where `evaluateOf` decides: a state copied in, decided on in place; decisions are synchronous. */
const scratch = new Float64Array(3);
const read = (i: number): number => scratch[i] as number;

/**
 * An algorithm's `evaluate`, made of its `evaluateAt` over states of `size` numbers: the state
 * copied into a scratch row and decided on there, the next state a new array when allowed. A
 * refusal's next is the state as it was, or for a key without one the algorithm's `seed` of
 * nothing spent at `now`.
 */
export function evaluateOf(evaluateAt: EvaluateAt, size: 2 | 3, seed: Algorithm['seed']): Algorithm['evaluate'] {
  return (state, policy, capacity, cost, now) => {
    if (state !== undefined) for (let i = 0; i < size; i++) scratch[i] = state[i] as number;
    const into: Evaluation = {
      allowed: false,
      remaining: 0,
      resetAfterMs: 0,
      retryAfterMs: 0,
      delayMs: 0,
      next: state as State,
    };
    evaluateAt(scratch, 0, state === undefined, policy, capacity, cost, now, into);
    if (into.allowed) into.next = size === 2 ? [read(0), read(1)] : [read(0), read(1), read(2)];
    else if (state === undefined) into.next = seed(0, policy, now);
    return into;
  };
}
