import { type AlgorithmName, type Policy, type PolicyOptions, storeKey, toPolicy } from '@sluice/core';
import fc from 'fast-check';

/** Client keys as core hands them to stores, one of them hashed from hostile bytes. */
export const traceKeys = ['a', 'b:1', storeKey('a hostile {key}\n|with braces')];

/** Windows for traces on an injected clock, from 1 ms to an hour. */
export const anyWindowMs = fc.oneof(
  fc.constantFrom(1, 2, 7, 10, 100, 1_000, 60_000, 3_600_000),
  fc.integer({ min: 1, max: 200_000 }),
);

/** Windows short enough that real time moves states along (and Redis expires keys) within a trace. */
export const shortWindowMs = fc.integer({ min: 1, max: 8 });

/** One policy of the given algorithm, with every option that algorithm takes drawn at random. */
export function policyOptions(algorithm: AlgorithmName, windowMs = anyWindowMs): fc.Arbitrary<PolicyOptions> {
  return fc
    .record({
      limit: fc.oneof({ weight: 4, arbitrary: fc.integer({ min: 1, max: 8 }) }, fc.integer({ min: 1, max: 500 })),
      window: windowMs,
      burst: fc.option(fc.integer({ min: 1, max: 12 }), { nil: undefined }),
      maxDelayMs: fc.option(fc.integer({ min: 1, max: 5_000 }), { nil: undefined }),
      refillAmount: fc.integer({ min: 1, max: 5 }),
      refillInterval: fc.option(fc.integer({ min: 1, max: 5_000 }), { nil: undefined }),
    })
    .map(({ limit, window, burst, maxDelayMs, refillAmount, refillInterval }) => {
      const options: PolicyOptions = { limit, window, algorithm };
      const bucket = algorithm === 'token-bucket' || algorithm === 'leaky-bucket' || algorithm === 'gcra';
      if (bucket && burst !== undefined) options.burst = burst;
      if ((algorithm === 'leaky-bucket' || algorithm === 'gcra') && maxDelayMs !== undefined)
        options.queue = { maxDelayMs };
      // Refilled at the rate `limit` per `window` says: `limit` refills' worth of both.
      if (algorithm === 'token-bucket' && refillInterval !== undefined) {
        Object.assign(options, {
          refillAmount,
          refillInterval,
          limit: limit * refillAmount,
          window: limit * refillInterval,
        });
      }
      return options;
    });
}

/** A policy set and the effective capacities of one limiter: hard, or soft with a fixed overage. */
export interface PolicySet {
  policies: Policy[];
  capacities: number[];
}

export function policySet(
  algorithms: fc.Arbitrary<AlgorithmName>,
  maxPolicies = 3,
  windowMs = anyWindowMs,
): fc.Arbitrary<PolicySet> {
  return fc
    .tuple(
      fc.array(
        algorithms.chain((algorithm) => policyOptions(algorithm, windowMs)),
        { minLength: 1, maxLength: maxPolicies },
      ),
      fc.oneof(fc.constant(0), fc.constantFrom(10, 50, 100, 1000)),
    )
    .map(([list, overagePercent]) => {
      const policies = list.map((options, i) => toPolicy({ ...options, name: `p${i}` }, `policies[${i}]`));
      const capacities = policies.map((p) => Math.floor((p.capacity * (100 + overagePercent)) / 100));
      return { policies, capacities };
    });
}

export type StepOperation = 'consume' | 'peek' | 'refund' | 'reset';

/**
 * How far the clock moves before a step: whole milliseconds, or a fraction of one policy's
 * window (so traces reach window boundaries, refills and expiry whatever the windows are).
 */
export type Advance = { ms: number } | { windows: number; policy: number };

export interface Step {
  key: string;
  operation: StepOperation;
  cost: number;
  advance: Advance;
  /** A refund's: how long before it its charge was made (`StoreRequest.chargeAgeMs`); 0 for now. */
  chargeAge: number;
  /** A refund's: how long after that it may have been made (`StoreRequest.chargeSpanMs`). */
  chargeSpan: number;
}

const advance: fc.Arbitrary<Advance> = fc.oneof(
  { weight: 4, arbitrary: fc.constant({ ms: 0 }) },
  { weight: 3, arbitrary: fc.record({ ms: fc.integer({ min: 1, max: 10 }) }) },
  {
    weight: 4,
    arbitrary: fc.record({
      windows: fc.oneof(fc.double({ min: 0, max: 2.5, noNaN: true }), fc.constantFrom(0.5, 1, 2)),
      policy: fc.nat(3),
    }),
  },
  { weight: 1, arbitrary: fc.record({ ms: fc.integer({ min: 1, max: 10_000_000 }) }) },
  // A clock that steps back (NTP, another process's clock): a store must still decide as the reference.
  { weight: 1, arbitrary: fc.record({ ms: fc.integer({ min: -100, max: -1 }) }) },
);

export function advanceMs(step: Step, policies: readonly Policy[]): number {
  if ('ms' in step.advance) return step.advance.ms;
  const policy = policies[step.advance.policy % policies.length] as Policy;
  return Math.floor(step.advance.windows * policy.windowMs);
}

export const step: fc.Arbitrary<Step> = fc.record({
  key: fc.oneof({ weight: 4, arbitrary: fc.constant(traceKeys[0] as string) }, fc.constantFrom(...traceKeys)),
  operation: fc.oneof(
    { weight: 10, arbitrary: fc.constant<StepOperation>('consume') },
    { weight: 3, arbitrary: fc.constant<StepOperation>('peek') },
    { weight: 1, arbitrary: fc.constant<StepOperation>('refund') },
    { weight: 1, arbitrary: fc.constant<StepOperation>('reset') },
  ),
  cost: fc.oneof(
    { weight: 6, arbitrary: fc.constant(1) },
    { weight: 3, arbitrary: fc.integer({ min: 1, max: 6 }) },
    { weight: 1, arbitrary: fc.integer({ min: 1, max: 2_000 }) },
  ),
  advance,
  chargeAge: fc.oneof(
    { weight: 3, arbitrary: fc.constant(0) },
    { weight: 2, arbitrary: fc.integer({ min: 1, max: 20 }) },
    { weight: 2, arbitrary: fc.integer({ min: 1, max: 100_000 }) },
  ),
  chargeSpan: fc.oneof({ weight: 3, arbitrary: fc.constant(0) }, fc.integer({ min: 1, max: 20 })),
});

export const trace = fc.array(step, { minLength: 1, maxLength: 60, size: 'large' });
