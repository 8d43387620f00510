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

/** An evaluation a caller owns and hands back for the next one: `next` is its own array, of the state's size. */
export type Reused = Evaluation<number[]>;

/**
 * A pure reference implementation of one algorithm. The memory store runs it; each Redis
 * script mirrors it line for line, and the conformance suite proves they agree.
 *
 * `capacity` is the effective capacity (soft and elastic throttling raise it above
 * `policy.capacity`); `now` is integer epoch ms. A store may keep a state of its own shape `S`
 * with an algorithm that decides exactly as the reference does (the memory store's log).
 */
export interface Algorithm<S = State> {
  evaluate(state: S | undefined, policy: Policy, capacity: number, cost: number, now: number): Evaluation<S>;
  /**
   * For a state of fixed size, optional: `evaluate` without allocating, for the memory store's
   * one-policy path. Writes the outcome into `into`, and when allowed the state to store into
   * `into.next`; a refusal leaves `into.next` as it was. The algorithm's `evaluate` is made of
   * it, so the two never differ.
   */
  evaluateInto?(state: S | undefined, policy: Policy, capacity: number, cost: number, now: number, into: Reused): void;
  /** The state after giving `cost` units back, never beyond a fresh state. */
  refund(state: S | undefined, policy: Policy, capacity: number, cost: number, now: number): S | undefined;
  /**
   * A state with `used` units spent at `now` and nothing else known: how a policy takes over
   * from another version of itself (another limit, window or algorithm) without a fresh quota.
   */
  seed(used: number, policy: Policy, now: number): S;
}

/** One algorithm per name, over states of shape `S`. */
export type Algorithms<S = State> = Readonly<Record<AlgorithmName, Algorithm<S>>>;

/** Exact for non-negative integers below 2^53, which validation guarantees. */
export const ceilDiv = (a: number, b: number): number => Math.ceil(a / b);
export const floorDiv = (a: number, b: number): number => Math.floor(a / b);

/**
 * How far the clock stands behind the window a window algorithm's state was written in
 * (`state[0]` is its index); 0 unless the clock stepped back. The algorithm then decides as
 * of that window's start, and adds the lag to its waits: a step back never reopens a window
 * already counted, so it never admits more.
 */
export const clockLag = (state: State | undefined, windowMs: number, now: number): number =>
  state === undefined ? 0 : Math.max(0, (state[0] as number) * windowMs - now);
