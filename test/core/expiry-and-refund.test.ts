import type { Policy } from '@sluice/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  createMeter,
  type Meter,
  policyOf,
  policyTraceArb,
  run,
  START,
  type Step,
  traceArb,
  VARIANTS,
} from './support/meter.js';

/** How many cost-1 requests pass at one instant before the first refusal (queue slots count). */
function burstAt(meter: Meter, now: number): number {
  let passed = 0;
  while (passed < 1_000 && meter.consume(1, now).allowed) passed++;
  return passed;
}

const followUpArb = (policy: Policy) => traceArb(policy.windowMs, 6, 30);

describe('a state past its resetAfterMs reads exactly like a fresh one', () => {
  // The memory store drops a state lazily once its reset time has passed and Redis lets it
  // expire with PEXPIRE: neither may change a later decision.
  it.each(VARIANTS)('%s', (variant) => {
    fc.assert(
      fc.property(
        policyTraceArb(variant).chain(([policy, trace]) =>
          fc.tuple(fc.constant(policy), fc.constant(trace), fc.nat({ max: 3 }), followUpArb(policy)),
        ),
        ([policy, trace, extra, followUp]) => {
          const meter = createMeter(policy);
          const { outcomes, now } = run(meter, trace);
          const last = outcomes.at(-1);
          fc.pre(last !== undefined);
          const at = now + (last?.resetAfterMs ?? 0) + extra;
          expect(run(createMeter(policy, meter.state), followUp, at)).toEqual(run(createMeter(policy), followUp, at));
        },
      ),
      { numRuns: 150 },
    );
  });

  it.each(['token-bucket', 'token-bucket interval refill', 'leaky-bucket', 'gcra'] as const)(
    '%s, also when elastic throttling changes the capacity afterwards',
    (variant) => {
      fc.assert(
        fc.property(
          policyTraceArb(variant).chain(([policy, trace]) =>
            fc.tuple(
              fc.constant(policy),
              fc.constant(trace),
              fc.array(fc.record({ advance: fc.nat({ max: 200 }), cost: fc.integer({ min: 1, max: 6 }) })),
              fc.integer({ min: 0, max: 30 }),
            ),
          ),
          ([policy, trace, followUp, extra]) => {
            const meter = createMeter(policy);
            const { outcomes, now } = run(meter, trace);
            const at = now + (outcomes.at(-1)?.resetAfterMs ?? 0);
            const raised = policy.capacity + extra;
            const replay = (m: Meter) => {
              let t = at;
              return followUp.map((s: Step) => {
                t += s.advance;
                return m.consume(s.cost, t, raised);
              });
            };
            expect(replay(createMeter(policy, meter.state))).toEqual(replay(createMeter(policy)));
          },
        ),
        { numRuns: 200 },
      );
    },
  );
});

describe('resetAfterMs names one instant', () => {
  it.each(VARIANTS)('%s: a later peek reports the same reset instant, and 0 once it has passed', (variant) => {
    fc.assert(
      fc.property(policyTraceArb(variant), fc.nat({ max: 5_000 }), ([policy, trace], wait) => {
        const meter = createMeter(policy);
        const { outcomes, now } = run(meter, trace);
        const resetAt = now + (outcomes.at(-1)?.resetAfterMs ?? 0);
        expect(meter.consume(0, now + wait).resetAfterMs).toBe(Math.max(0, resetAt - now - wait));
      }),
      { numRuns: 150 },
    );
  });
});

describe('refund', () => {
  it.each(VARIANTS)('%s: never leaves more quota than a fresh state', (variant) => {
    fc.assert(
      fc.property(policyTraceArb(variant), fc.integer({ min: 1, max: 40 }), ([policy, trace], cost) => {
        const meter = createMeter(policy);
        const { now } = run(meter, trace);
        meter.refund(cost, now);
        expect(burstAt(meter, now)).toBeLessThanOrEqual(burstAt(createMeter(policy), now));
      }),
      { numRuns: 120 },
    );
  });

  it.each(VARIANTS)('%s: refunding what was just charged restores the state before the charge', (variant) => {
    fc.assert(
      fc.property(
        policyTraceArb(variant).chain(([policy, trace]) =>
          fc.tuple(fc.constant(policy), fc.constant(trace), fc.integer({ min: 1, max: 6 }), followUpArb(policy)),
        ),
        ([policy, trace, cost, followUp]) => {
          const meter = createMeter(policy);
          const { now } = run(meter, trace);
          const before = meter.state;
          fc.pre(meter.consume(cost, now).allowed);
          meter.refund(cost, now);
          expect(run(meter, followUp, now)).toEqual(run(createMeter(policy, before), followUp, now));
        },
      ),
      { numRuns: 120 },
    );
  });
});

describe('a refund made later than its charge', () => {
  // An adapter refunds when the response ends (`skipFailedRequests`), and rules mode when a
  // later rule refuses: the clock has moved on, perhaps past a window boundary, and what the
  // charge still weighs must come back, as if it had never been made.
  it.each(VARIANTS)('%s: leaves the state the charge found, as seen at the refund', (variant) => {
    fc.assert(
      fc.property(
        policyTraceArb(variant).chain(([policy, trace]) =>
          fc.tuple(
            fc.constant(policy),
            fc.constant(trace),
            fc.integer({ min: 1, max: 6 }),
            fc.integer({ min: 0, max: policy.windowMs }),
            followUpArb(policy),
          ),
        ),
        ([policy, trace, cost, later, followUp]) => {
          const meter = createMeter(policy);
          const { now } = run(meter, trace);
          const before = meter.state;
          fc.pre(meter.consume(cost, now).allowed);
          meter.refund(cost, now + later);
          expect(run(meter, followUp, now + later)).toEqual(run(createMeter(policy, before), followUp, now + later));
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('time is integer arithmetic with no drift', () => {
  it.each(['token-bucket', 'leaky-bucket', 'gcra'] as const)(
    '%s: 3 per second (a 333.3… ms interval) admits exactly 3 per second over six hours',
    (algorithm) => {
      const meter = createMeter(policyOf({ limit: 3, window: '1s', algorithm }));
      const hours = 6 * 3_600_000;
      let passed = 0;
      // Offered far above the rate, every 37 ms, which never lines up with the interval.
      for (let t = 0; t <= hours; t += 37) if (meter.consume(1, START + t).allowed) passed++;
      // The initial burst of 3, then one every 333.3… ms: any drift would add up to many.
      expect(passed).toBeGreaterThanOrEqual(3 + (3 * hours) / 1000 - 1);
      expect(passed).toBeLessThanOrEqual(3 + (3 * hours) / 1000);
    },
  );
});
