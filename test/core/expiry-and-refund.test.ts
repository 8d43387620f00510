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

  // Not an interval refill's charge made where a step falls, or in a bucket charged since:
  // whether the charge began the phase cannot be told there, and nothing is given back (a
  // conformance test holds it to no step early).
  const restoring = VARIANTS.filter((v) => v !== 'token-bucket interval refill');
  it.each(restoring)('%s: refunding what was just charged restores the state before the charge', (variant) => {
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
  // charge still weighs must come back, as if it had never been made. A bucket whose state
  // tells no time of its last charge (gcra's TAT, an interval refill's phase) cannot know that
  // nothing was charged since, and gives back only what has not refilled since the charge.
  const exact = VARIANTS.filter((v) => v !== 'gcra' && v !== 'gcra queue' && v !== 'token-bucket interval refill');
  it.each(exact)('%s: leaves the state the charge found, as seen at the refund', (variant) => {
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
          meter.refund(cost, now + later, policy.capacity, now);
          expect(run(meter, followUp, now + later)).toEqual(run(createMeter(policy, before), followUp, now + later));
        },
      ),
      { numRuns: 300 },
    );
  });

  // The refund once gave back its units whatever was charged after them: a bucket that had
  // refilled to full since took a later request's units instead (3 at once with a burst of 2),
  // the log its newest entry, a later request's.
  // Not of an interval refill: its phase restarts at a charge that finds the bucket full, so
  // without this charge the later requests would have met other steps (a conformance test
  // holds its refund to what has not refilled since).
  const comparable = VARIANTS.filter((v) => v !== 'token-bucket interval refill');
  it.each(comparable)(
    '%s: never leaves more quota than had the charge not been made, whatever came after',
    (variant) => {
      fc.assert(
        fc.property(
          policyTraceArb(variant).chain(([policy, trace]) =>
            fc.tuple(
              fc.constant(policy),
              fc.constant(trace),
              fc.integer({ min: 1, max: 6 }),
              traceArb(policy.windowMs, 6, 12),
              fc.nat({ max: 2 * policy.windowMs }),
            ),
          ),
          ([policy, trace, cost, between, wait]) => {
            const meter = createMeter(policy);
            const { now: chargedAt } = run(meter, trace);
            const without = createMeter(policy, meter.state);
            fc.pre(meter.consume(cost, chargedAt).allowed);
            // What passed after the charge passes without it too, and is charged there alike.
            let now = chargedAt;
            for (const step of between) {
              now += step.advance;
              if (meter.consume(step.cost, now).allowed) expect(without.consume(step.cost, now).allowed).toBe(true);
            }
            const at = now + wait;
            meter.refund(cost, at, policy.capacity, chargedAt);
            for (const later of [0, policy.windowMs >> 1, policy.windowMs]) {
              const refunded = burstAt(createMeter(policy, meter.state), at + later);
              expect(refunded).toBeLessThanOrEqual(burstAt(createMeter(policy, without.state), at + later));
            }
          },
        ),
        { numRuns: 300 },
      );
    },
  );
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
