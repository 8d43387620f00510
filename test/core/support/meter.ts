import {
  type AlgorithmName,
  algorithms,
  type Policy,
  type PolicyOptions,
  type PolicyOutcome,
  type State,
  toPolicy,
} from '@sluice/core';
import fc from 'fast-check';

/** An epoch-ms start far from 0, so window indices and timestamps look like production ones. */
export const START = 1_700_000_000_000;

export const policyOf = (options: PolicyOptions): Policy => toPolicy(options, 'policy');

/** The public outcome fields only: `next` is a private state layout that differs per algorithm. */
export function outcomeOf(evaluation: PolicyOutcome): PolicyOutcome {
  const { allowed, remaining, resetAfterMs, retryAfterMs, delayMs } = evaluation;
  return { allowed, remaining, resetAfterMs, retryAfterMs, delayMs };
}

/**
 * A refused decision's wait for one policy, as the limiter states it: `Infinity` where no wait
 * lets `cost` pass (even a fresh state refuses it), else the reference algorithm's.
 */
export function statedRetryAfterMs(policy: Policy, capacity: number, cost: number, retryAfterMs: number): number {
  const never =
    cost > capacity && !algorithms[policy.algorithm].evaluate(undefined, policy, capacity, cost, START).allowed;
  return never ? Number.POSITIVE_INFINITY : retryAfterMs;
}

/**
 * One policy for one client run on its reference algorithm, keeping the state exactly as a
 * store does: replaced only when the request is allowed and charges something.
 */
export interface Meter {
  state: State | undefined;
  consume(cost: number, now: number, capacity?: number): PolicyOutcome;
  refund(cost: number, now: number, capacity?: number, chargedAt?: number, chargedBy?: number): void;
}

export function createMeter(policy: Policy, state?: State): Meter {
  const algorithm = algorithms[policy.algorithm];
  const meter: Meter = {
    state,
    consume(cost, now, capacity = policy.capacity) {
      const evaluation = algorithm.evaluate(meter.state, policy, capacity, cost, now);
      if (evaluation.allowed && cost > 0) meter.state = evaluation.next;
      return outcomeOf(evaluation);
    },
    refund(cost, now, capacity = policy.capacity, chargedAt = now, chargedBy = chargedAt) {
      meter.state = algorithm.refund(meter.state, policy, capacity, cost, now, chargedAt, chargedBy);
    },
  };
  return meter;
}

/** One request of a trace: wait `advance` ms, then ask for `cost` units. */
export interface Step {
  advance: number;
  cost: number;
}

/** Mostly short waits (several requests in one ms, within one window), sometimes long ones. */
export const advanceArb = (windowMs: number): fc.Arbitrary<number> =>
  fc.oneof(
    { weight: 3, arbitrary: fc.constant(0) },
    { weight: 4, arbitrary: fc.integer({ min: 1, max: Math.max(1, Math.ceil(windowMs / 4)) }) },
    { weight: 2, arbitrary: fc.integer({ min: 1, max: 3 * windowMs }) },
  );

export const traceArb = (windowMs: number, maxCost: number, maxLength = 40): fc.Arbitrary<Step[]> =>
  fc.array(fc.record({ advance: advanceArb(windowMs), cost: fc.integer({ min: 1, max: maxCost }) }), {
    maxLength,
  });

/** Windows that divide evenly, that do not, and a prime, so no rounding path is left out. */
export const windowArb: fc.Arbitrary<number> = fc.oneof(
  fc.constantFrom(1, 7, 60, 997, 1000, 60_000),
  fc.integer({ min: 1, max: 5_000 }),
);

/** Every way a policy can decide: the six algorithms, interval refill and queue mode. */
export const VARIANTS = [
  'token-bucket',
  'token-bucket interval refill',
  'leaky-bucket',
  'leaky-bucket queue',
  'gcra',
  'gcra queue',
  'fixed-window',
  'sliding-window-log',
  'sliding-window-counter',
] as const;
export type Variant = (typeof VARIANTS)[number];

/** Random valid policies of one variant, with a burst some of the time for the buckets. */
export function policyArb(variant: Variant): fc.Arbitrary<Policy> {
  const [algorithm, mode] = variant.split(' ', 2) as [AlgorithmName, string | undefined];
  return fc
    .record({
      limit: fc.integer({ min: 1, max: 20 }),
      window: windowArb,
      burst: fc.option(fc.integer({ min: 1, max: 25 }), { nil: undefined }),
      maxDelayMs: fc.integer({ min: 1, max: 3_000 }),
      refillAmount: fc.integer({ min: 1, max: 5 }),
      refillInterval: windowArb,
    })
    .map(({ limit, window, burst, maxDelayMs, refillAmount, refillInterval }) => {
      const options: PolicyOptions = { algorithm, limit, window };
      const isBucket = algorithm === 'token-bucket' || algorithm === 'leaky-bucket' || algorithm === 'gcra';
      if (isBucket && burst !== undefined) options.burst = burst;
      if (mode === 'queue') options.queue = { maxDelayMs };
      // Refilled at the rate `limit` per `window` says: `limit` refills' worth of both.
      if (mode === 'interval')
        Object.assign(options, {
          refillAmount,
          refillInterval,
          limit: limit * refillAmount,
          window: limit * refillInterval,
        });
      return policyOf(options);
    });
}

/** A policy of any variant. */
export const anyPolicyArb: fc.Arbitrary<Policy> = fc.constantFrom(...VARIANTS).chain(policyArb);

/** A policy together with a trace scaled to its window. */
export const policyTraceArb = (variant: Variant, maxCost = 6, maxLength = 40) =>
  policyArb(variant).chain((policy) => fc.tuple(fc.constant(policy), traceArb(policy.windowMs, maxCost, maxLength)));

/** Runs a trace from `START`, returning the outcomes and the time of the last request. */
export function run(meter: Meter, trace: readonly Step[], start = START): { outcomes: PolicyOutcome[]; now: number } {
  let now = start;
  const outcomes = trace.map((step) => {
    now += step.advance;
    return meter.consume(step.cost, now);
  });
  return { outcomes, now };
}

/** The options that make `createLimiter` build this policy again (under another name if given). */
export function optionsOf(policy: Policy, name = policy.name): PolicyOptions {
  const options: PolicyOptions = { name, limit: policy.limit, window: policy.windowMs, algorithm: policy.algorithm };
  const isBucket =
    policy.algorithm === 'token-bucket' || policy.algorithm === 'leaky-bucket' || policy.algorithm === 'gcra';
  if (isBucket) options.burst = policy.capacity;
  if (policy.maxDelayMs > 0) options.queue = { maxDelayMs: policy.maxDelayMs };
  if (policy.refillIntervalMs > 0) {
    options.refillAmount = policy.refillAmount;
    options.refillInterval = policy.refillIntervalMs;
  }
  return options;
}
