import { algorithms, createLimiter, type Policy } from '@sluice/core';
import { createMemoryStore } from '@sluice/memory';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { manualClock } from '../helpers/clock.js';
import {
  createMeter,
  type Meter,
  optionsOf,
  policyArb,
  policyTraceArb,
  run,
  START,
  VARIANTS,
} from './support/meter.js';

const canEverPass = (policy: Policy, cost: number): boolean =>
  algorithms[policy.algorithm].evaluate(undefined, policy, policy.capacity, cost, START).allowed;

/** Asks for `cost` at `now` until refused (refusals change nothing), returning the refusal. */
function hammer(meter: Meter, cost: number, now: number) {
  for (let i = 0; i < 100_000; i++) {
    const outcome = meter.consume(cost, now);
    if (!outcome.allowed) return outcome;
  }
  throw new Error('never refused');
}

describe('retryAfterMs is exact', () => {
  it.each(VARIANTS)('%s: the same request passes at now + retryAfterMs and fails 1 ms earlier', (variant) => {
    fc.assert(
      fc.property(policyTraceArb(variant), fc.integer({ min: 1, max: 6 }), ([policy, trace], cost) => {
        fc.pre(canEverPass(policy, cost));
        const meter = createMeter(policy);
        const { now } = run(meter, trace);
        const refused = hammer(meter, cost, now);
        expect(refused.retryAfterMs).toBeGreaterThanOrEqual(1);
        expect(Number.isSafeInteger(refused.retryAfterMs)).toBe(true);
        const state = meter.state;
        expect(createMeter(policy, state).consume(cost, now + refused.retryAfterMs - 1).allowed).toBe(false);
        expect(createMeter(policy, state).consume(cost, now + refused.retryAfterMs).allowed).toBe(true);
      }),
      { numRuns: 200 },
    );
  });

  it('for several policies, the decision waits for the slowest refusal, exactly', async () => {
    await fc.assert(
      fc.asyncProperty(
        // Queues kept short enough that refusing takes a few hundred requests at most.
        fc.array(
          fc
            .constantFrom(...VARIANTS)
            .chain(policyArb)
            .filter((p) => p.capacity + (p.maxDelayMs * p.limit) / p.windowMs <= 200),
          { minLength: 2, maxLength: 3 },
        ),
        fc.array(fc.record({ advance: fc.integer({ min: 0, max: 2_000 }), cost: fc.integer({ min: 1, max: 4 }) }), {
          maxLength: 25,
        }),
        fc.integer({ min: 1, max: 4 }),
        async (policies, trace, cost) => {
          fc.pre(policies.every((p) => canEverPass(p, cost)));
          const clock = manualClock(START);
          const limiter = createLimiter({
            policies: policies.map((p, i) => optionsOf(p, `p${i}`)),
            clock,
            store: createMemoryStore({ maxKeys: 10 }),
          });
          for (const step of trace) {
            clock.advance(step.advance);
            await limiter.consume('k', { cost: step.cost });
          }
          let refused = await limiter.consume('k', { cost });
          for (let i = 0; refused.allowed && i < 1_000; i++) refused = await limiter.consume('k', { cost });
          expect(refused.allowed).toBe(false);
          const waits = refused.policies.filter((p) => !p.allowed).map((p) => p.retryAfterMs);
          expect(refused.retryAfterMs).toBe(Math.max(...waits));
          clock.advance(refused.retryAfterMs - 1);
          expect((await limiter.consume('k', { cost })).allowed).toBe(false);
          clock.advance(1);
          expect((await limiter.consume('k', { cost })).allowed).toBe(true);
        },
      ),
      { numRuns: 100 },
    );
  });
});
