import type { PolicyOptions } from '@sluice/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { advanceArb, createMeter, policyOf, START, windowArb } from './support/meter.js';

// SPEC §2: token-bucket, leaky-bucket and gcra are one meter described three ways, so for the
// same limit, window, burst and cost every field of every outcome must agree.

const paramsArb = fc.record({
  limit: fc.integer({ min: 1, max: 50 }),
  window: windowArb,
  burst: fc.option(fc.integer({ min: 1, max: 60 }), { nil: undefined }),
});

const stepsArb = (windowMs: number) =>
  fc.array(fc.record({ advance: advanceArb(windowMs), cost: fc.integer({ min: 1, max: 70 }) }), { maxLength: 60 });

function meters(base: Omit<PolicyOptions, 'algorithm'>) {
  return (['token-bucket', 'leaky-bucket', 'gcra'] as const).map((algorithm) =>
    createMeter(policyOf({ ...base, algorithm })),
  );
}

describe('token-bucket, leaky-bucket and gcra decide identically', () => {
  it('for random traces of (cost, time advance), every outcome field agrees', () => {
    fc.assert(
      fc.property(
        paramsArb.chain((p) => fc.tuple(fc.constant(p), stepsArb(p.window))),
        ([{ limit, window, burst }, steps]) => {
          const [tb, lb, gcra] = meters(burst === undefined ? { limit, window } : { limit, window, burst });
          let now = START;
          for (const { advance, cost } of steps) {
            now += advance;
            const expected = tb?.consume(cost, now);
            expect(lb?.consume(cost, now)).toEqual(expected);
            expect(gcra?.consume(cost, now)).toEqual(expected);
          }
        },
      ),
      { numRuns: 400 },
    );
  });

  it('still agree when the effective capacity changes between calls (elastic throttling)', () => {
    // Elastic mode hands the store a capacity that follows the load, so the same state is
    // read against different capacities; the three descriptions must not drift apart.
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 20 }),
        windowArb,
        fc.array(
          fc.record({
            advance: fc.integer({ min: 0, max: 500 }),
            cost: fc.integer({ min: 1, max: 8 }),
            extra: fc.integer({ min: 0, max: 20 }),
          }),
          { maxLength: 50 },
        ),
        (limit, window, steps) => {
          const [tb, lb, gcra] = meters({ limit, window });
          let now = START;
          for (const { advance, cost, extra } of steps) {
            now += advance;
            const expected = tb?.consume(cost, now, limit + extra);
            expect(lb?.consume(cost, now, limit + extra)).toEqual(expected);
            expect(gcra?.consume(cost, now, limit + extra)).toEqual(expected);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('after a refund, all three continue identically', () => {
    fc.assert(
      fc.property(
        paramsArb.chain((p) =>
          fc.tuple(
            fc.constant(p),
            fc.array(
              fc.record({
                advance: advanceArb(p.window),
                cost: fc.integer({ min: 1, max: 10 }),
                refund: fc.boolean(),
              }),
              { maxLength: 40 },
            ),
          ),
        ),
        ([{ limit, window, burst }, steps]) => {
          const all = meters(burst === undefined ? { limit, window } : { limit, window, burst });
          let now = START;
          for (const { advance, cost, refund } of steps) {
            now += advance;
            if (refund) for (const meter of all) meter.refund(cost, now);
            const [expected, ...rest] = all.map((meter) => meter.consume(cost, now));
            for (const outcome of rest) expect(outcome).toEqual(expected);
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it('leaky-bucket and gcra agree in queue mode, delays included', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 20 }),
        windowArb,
        fc.integer({ min: 1, max: 5_000 }),
        fc.array(fc.record({ advance: fc.integer({ min: 0, max: 300 }), cost: fc.integer({ min: 1, max: 5 }) }), {
          maxLength: 60,
        }),
        (limit, window, maxDelayMs, steps) => {
          const lb = createMeter(policyOf({ limit, window, algorithm: 'leaky-bucket', queue: { maxDelayMs } }));
          const gcra = createMeter(policyOf({ limit, window, algorithm: 'gcra', queue: { maxDelayMs } }));
          let now = START;
          for (const { advance, cost } of steps) {
            now += advance;
            expect(gcra.consume(cost, now)).toEqual(lb.consume(cost, now));
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
