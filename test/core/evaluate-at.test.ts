import { algorithmNames, algorithms, type PolicyOutcome } from '@sluice/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createMeter, outcomeOf, policyTraceArb, START, VARIANTS } from './support/meter.js';

// The memory store charges a one-policy client's state where its row holds it
// (`evaluateAt`), among other clients' rows. Deciding there must equal the reference decision
// on a copy, write the next state only when allowed, and touch nothing outside the state.

/** Every variant but the sliding log's, whose state is a list of any length and takes no row. */
const IN_PLACE = VARIANTS.filter((variant) => variant !== 'sliding-window-log');
/** What the rows around a state hold in this test: no state reads as it. */
const ELSEWHERE = -7.5;

const blankOutcome = (): PolicyOutcome => ({
  allowed: false,
  remaining: -1,
  resetAfterMs: -1,
  retryAfterMs: -1,
  delayMs: -1,
});

describe('deciding on a state in place', () => {
  it('is how every algorithm decides but the sliding log (the memory store relies on it)', () => {
    const inPlace = algorithmNames.filter((name) => algorithms[name].evaluateAt !== undefined);
    expect(inPlace.sort()).toEqual(algorithmNames.filter((name) => name !== 'sliding-window-log').sort());
  });

  for (const variant of IN_PLACE) {
    it(`${variant}: equals the reference, writes only an allowed next state, and only its own values`, () => {
      fc.assert(
        fc.property(policyTraceArb(variant, 6, 30), fc.integer({ min: 0, max: 8 }), ([policy, trace], offset) => {
          const algorithm = algorithms[policy.algorithm];
          const evaluateAt = algorithm.evaluateAt;
          if (evaluateAt === undefined) throw new Error(`${variant} decides in place`);
          const reference = createMeter(policy);
          const size = algorithm.seed(0, policy, START).length;
          const rows = new Float64Array(offset + size + 3).fill(ELSEWHERE);
          let held = false;
          let now = START;
          for (const { advance, cost } of trace) {
            now += advance;
            const before = Array.from(rows);
            const into = blankOutcome();
            evaluateAt(rows, offset, !held, policy, policy.capacity, cost, now, into);
            const expected = reference.consume(cost, now);
            expect(into).toEqual(expected);
            const state = Array.from(rows.subarray(offset, offset + size));
            if (into.allowed) {
              expect(state).toEqual(reference.state);
              held = true;
            } else {
              expect(state).toEqual(before.slice(offset, offset + size));
            }
            // Nothing before or after the state is written.
            expect([...rows.subarray(0, offset), ...rows.subarray(offset + size)]).toEqual([
              ...before.slice(0, offset),
              ...before.slice(offset + size),
            ]);
          }
        }),
        { numRuns: 300 },
      );
    });
  }

  it('reads no values for a key without state', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...IN_PLACE).chain((variant) => policyTraceArb(variant, 6, 1)),
        fc.double({ noNaN: false }),
        ([policy], garbage) => {
          const evaluateAt = algorithms[policy.algorithm].evaluateAt;
          if (evaluateAt === undefined) throw new Error(`${policy.algorithm} decides in place`);
          const into = blankOutcome();
          evaluateAt(new Float64Array(3).fill(garbage), 0, true, policy, policy.capacity, 1, START, into);
          expect(into).toEqual(
            outcomeOf(algorithms[policy.algorithm].evaluate(undefined, policy, policy.capacity, 1, START)),
          );
        },
      ),
    );
  });
});
