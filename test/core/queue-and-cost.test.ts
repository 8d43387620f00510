import { algorithms, createLimiter, type Policy } from '@sluice/core';
import { createMemoryStore } from '@sluice/memory';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { manualClock } from '../helpers/clock.js';
import { createMeter, optionsOf, policyArb, policyOf, START, VARIANTS } from './support/meter.js';

describe('queue mode (leaky-bucket and gcra as a queue)', () => {
  it.each(['leaky-bucket', 'gcra'] as const)(
    '%s: a burst leaves FIFO at 10/s after the 2 of the burst; past 1 s of delay it is refused',
    (algorithm) => {
      const meter = createMeter(
        policyOf({ limit: 10, window: '1s', burst: 2, algorithm, queue: { maxDelayMs: '1s' } }),
      );
      const outcomes = Array.from({ length: 14 }, () => meter.consume(1, START));
      expect(outcomes.map((o) => (o.allowed ? o.delayMs : 'refused'))).toEqual([
        0,
        0,
        100,
        200,
        300,
        400,
        500,
        600,
        700,
        800,
        900,
        1_000,
        'refused',
        'refused',
      ]);
      expect(outcomes[12]?.retryAfterMs).toBe(100);
      // A request arriving later takes the next free slot, not a fresh place at the front.
      expect(meter.consume(1, START + 250).delayMs).toBe(850);
    },
  );

  it.each(['leaky-bucket', 'gcra'] as const)(
    '%s: peek says whether a unit passes without waiting, and the wait the queue holds',
    async (algorithm) => {
      const clock = manualClock();
      const limiter = createLimiter({
        limit: 2,
        window: '1s',
        algorithm,
        queue: { maxDelayMs: '1s' },
        store: createMemoryStore(),
        clock,
      });
      const seen: string[] = [];
      for (let i = 0; i < 5; i++) {
        const peeked = await limiter.peek('a');
        const consumed = await limiter.consume('a');
        seen.push(`${peeked.allowed}/${peeked.delayMs} ${consumed.allowed}/${consumed.delayMs}`);
      }
      // The third and fourth requests are queued (500 and 1000 ms), while peek reads false.
      expect(seen).toEqual([
        'true/0 true/0',
        'true/0 true/0',
        'false/0 true/500',
        'false/500 true/1000',
        'false/1000 false/0',
      ]);
    },
  );

  it('an interval that is not a whole number of ms (3/s) never drifts: slot k leaves at ⌈k × 1000/3⌉', () => {
    const meter = createMeter(
      policyOf({ limit: 3, window: '1s', burst: 1, algorithm: 'gcra', queue: { maxDelayMs: '1m' } }),
    );
    const delays = Array.from({ length: 181 }, () => meter.consume(1, START).delayMs);
    expect(delays).toEqual(delays.map((_, k) => Math.ceil((k * 1_000) / 3)));
    expect(meter.consume(1, START).allowed).toBe(false);
  });

  it.each(['leaky-bucket', 'gcra'] as const)(
    '%s: for any arrivals, requests leave in arrival order, spaced by cost × W/L while queued, never past maxDelayMs',
    (algorithm) => {
      fc.assert(
        fc.property(
          fc.integer({ min: 1, max: 20 }),
          fc.integer({ min: 1, max: 5_000 }),
          fc.integer({ min: 1, max: 10 }),
          fc.integer({ min: 1, max: 4_000 }),
          fc.array(fc.record({ gap: fc.nat({ max: 400 }), cost: fc.integer({ min: 1, max: 10 }) }), { maxLength: 60 }),
          (limit, window, burst, maxDelayMs, arrivals) => {
            const policy = policyOf({ limit, window, burst, algorithm, queue: { maxDelayMs } });
            const meter = createMeter(policy);
            let now = START;
            let previous: { leaves: number; delayed: boolean } | undefined;
            for (const { gap, cost } of arrivals) {
              now += gap;
              const outcome = meter.consume(Math.min(cost, burst), now);
              if (!outcome.allowed) continue;
              expect(outcome.delayMs).toBeLessThanOrEqual(maxDelayMs);
              const leaves = now + outcome.delayMs;
              if (previous !== undefined) {
                expect(leaves).toBeGreaterThanOrEqual(previous.leaves);
                // Both queued: the outflow is the constant rate, up to the 1 ms rounding of each.
                if (previous.delayed && outcome.delayMs > 0)
                  expect(Math.abs(leaves - previous.leaves - (Math.min(cost, burst) * window) / limit)).toBeLessThan(1);
              }
              previous = { leaves, delayed: outcome.delayMs > 0 };
            }
          },
        ),
        { numRuns: 300 },
      );
    },
  );
});

/** The smallest cost that even a fresh state refuses. */
const impossibleCost = (p: Policy): number =>
  p.capacity + (p.maxDelayMs > 0 ? Math.floor((p.maxDelayMs * p.limit) / p.windowMs) : 0) + 1;

describe('a cost larger than the capacity', () => {
  // A refusal asks whether its cost could ever pass only when the cost exceeds the capacity.
  it.each(VARIANTS)('%s: any cost up to the capacity, raised or not, passes a fresh state', (variant) => {
    fc.assert(
      fc.property(policyArb(variant), fc.integer({ min: 0, max: 10 }), fc.nat(), (policy, raise, seed) => {
        const capacity = policy.capacity + Math.floor((policy.capacity * raise) / 10);
        const cost = 1 + (seed % capacity);
        expect(algorithms[policy.algorithm].evaluate(undefined, policy, capacity, cost, START).allowed).toBe(true);
      }),
      { numRuns: 200 },
    );
  });

  it.each(VARIANTS)('%s: is refused for good, spends nothing, and says so', async (variant) => {
    await fc.assert(
      fc.asyncProperty(policyArb(variant), fc.nat({ max: 3 }), async (policy, extra) => {
        const clock = manualClock(START);
        const limiter = createLimiter({ ...optionsOf(policy), clock, store: createMemoryStore({ maxKeys: 10 }) });
        const before = await limiter.peek('k');
        const decision = await limiter.consume('k', { cost: impossibleCost(policy) + extra });
        expect(decision).toMatchObject({ allowed: false, reason: 'cost-exceeds-limit', retryAfterMs: Infinity });
        expect(await limiter.peek('k')).toEqual(before);
        // The largest cost that can pass still does: the refusal left the full quota in place.
        expect((await limiter.consume('k', { cost: impossibleCost(policy) - 1 })).allowed).toBe(true);
      }),
      { numRuns: 50 },
    );
  });

  it('in one policy of several: refused with the reason, and no policy is charged', async () => {
    const clock = manualClock(START);
    const limiter = createLimiter({
      policies: [
        { name: 'burst', limit: 5, window: '1s', algorithm: 'token-bucket' },
        { name: 'hour', limit: 100, window: '1h' },
      ],
      clock,
      store: createMemoryStore({ maxKeys: 10 }),
    });
    const decision = await limiter.consume('k', { cost: 6 });
    expect(decision).toMatchObject({ allowed: false, reason: 'cost-exceeds-limit', retryAfterMs: Infinity });
    expect((await limiter.peek('k')).policies.map((p) => p.remaining)).toEqual([5, 100]);
  });

  it('a cost that a fresh state could pass but the current one cannot gets a finite wait, not the reason', async () => {
    const clock = manualClock(START);
    const limiter = createLimiter({ limit: 5, window: '1s', algorithm: 'gcra', clock });
    await limiter.consume('k', { cost: 3 });
    const decision = await limiter.consume('k', { cost: 5 });
    expect(decision.reason).toBeUndefined();
    expect(decision.retryAfterMs).toBe(600);
  });
});
