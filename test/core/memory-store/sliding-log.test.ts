import { algorithms, createLimiter, createMemoryStore, type Policy, type State, toPolicy } from '@sluice/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type LogBuffer,
  LogCharge,
  type LogState,
  memorySlidingLog,
} from '../../../packages/core/src/memory-store/sliding-log.js';
import { outcomeOf, START } from '../support/meter.js';

const reference = algorithms['sliding-window-log'];

/** What is stored after a decision, as a store stores it: only an allowed charge replaces the state. */
const stored = (next: LogState): LogBuffer => (next instanceof LogCharge ? next.apply() : next);

describe("the memory store's sliding log decides as core's reference", () => {
  const step = fc.record({
    // Backward steps included: the reference still counts what it has not pruned.
    advance: fc.oneof(fc.integer({ min: 0, max: 30 }), fc.integer({ min: -60, max: 200 })),
    operation: fc.constantFrom('consume', 'consume', 'consume', 'peek', 'refund'),
    cost: fc.integer({ min: 1, max: 4 }),
    // Soft or elastic throttling changes the capacity from one request to the next.
    extra: fc.constantFrom(0, 0, 0, 3, 20),
    // How long before the refund its charge was made: entries logged after it stay.
    chargeAge: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 150 })),
    // How long after that it may have been made: its entry is found within.
    chargeSpan: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 20 })),
  });

  it('for every charge, peek, refund, capacity and clock step', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 12 }),
        fc.integer({ min: 1, max: 100 }),
        fc.array(step, { maxLength: 120 }),
        (limit, windowMs, steps) => {
          const policy: Policy = toPolicy({ limit, window: windowMs, algorithm: 'sliding-window-log' }, 'policy');
          let expected: State | undefined;
          let log: LogBuffer | undefined;
          let now = START;
          for (const { advance, operation, cost, extra, chargeAge, chargeSpan } of steps) {
            now += advance;
            const capacity = limit + extra;
            if (operation === 'refund') {
              const [at, by] = [now - chargeAge, Math.min(now, now - chargeAge + chargeSpan)];
              expected = reference.refund(expected, policy, capacity, cost, now, at, by);
              log = memorySlidingLog.refund(log, policy, capacity, cost, now, at, by) as LogBuffer;
              continue;
            }
            const charge = operation === 'peek' ? 0 : cost;
            const want = reference.evaluate(expected, policy, capacity, charge, now);
            const got = memorySlidingLog.evaluate(log, policy, capacity, charge, now);
            expect(outcomeOf(got)).toEqual(outcomeOf(want));
            if (want.allowed && charge > 0) {
              expected = want.next;
              log = stored(got.next);
            }
          }
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe("a refusal's wait on the memory store's sliding log", () => {
  // Read from the oldest entries when fewer units must leave than may stay, else from the
  // newest: both ends, every cost up to past the capacity, a capacity that falls below the
  // units logged (throttling's overage ending), the same as the reference's.
  it('is the reference wait, from whichever end of the log it is read', () => {
    const step = fc.record({
      advance: fc.integer({ min: 0, max: 19 }),
      cost: fc.integer({ min: 1, max: 16 }),
      extra: fc.constantFrom(0, 0, 3, 20),
    });
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 12 }),
        fc.integer({ min: 1, max: 100 }),
        fc.array(step, { minLength: 20, maxLength: 80 }),
        (limit, windowMs, steps) => {
          const policy: Policy = toPolicy({ limit, window: windowMs, algorithm: 'sliding-window-log' }, 'policy');
          let expected: State | undefined;
          let log: LogBuffer | undefined;
          let now = START;
          for (const { advance, cost, extra } of steps) {
            now += advance;
            const want = reference.evaluate(expected, policy, limit + extra, cost, now);
            const got = memorySlidingLog.evaluate(log, policy, limit + extra, cost, now);
            expect(outcomeOf(got)).toEqual(outcomeOf(want));
            if (want.allowed) {
              expected = want.next;
              log = stored(got.next);
            }
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});

/**
 * Values copied by array slices and typed-array moves while `run` runs: every way the log could
 * be copied. The memory store used to copy the whole log twice per decision.
 */
function valuesCopiedBy(run: () => void): number {
  const typed = Object.getPrototypeOf(Float64Array.prototype) as Float64Array;
  const { slice } = Array.prototype;
  const { set, copyWithin } = typed;
  let copied = 0;
  Array.prototype.slice = function (this: unknown[], ...args: [number?, number?]) {
    const result = slice.apply(this, args);
    copied += result.length;
    return result;
  };
  typed.set = function (this: Float64Array, source: ArrayLike<number>, offset?: number) {
    copied += source.length;
    return set.call(this, source, offset);
  };
  typed.copyWithin = function (this: Float64Array, target: number, start: number, end?: number) {
    copied += (end ?? this.length) - start;
    return copyWithin.call(this, target, start, end);
  };
  try {
    run();
  } finally {
    Array.prototype.slice = slice;
    typed.set = set;
    typed.copyWithin = copyWithin;
  }
  return copied;
}

describe('a long sliding-window-log on the memory store', () => {
  // Its log lived in the client's entry and each decision copied it whole: the store refused
  // log limits above 100,000 at construction, and a log near that size overflowed the stack.
  it('is accepted with a limit of 1,000,000, decided exactly, and copied O(n) times in all, not per decision', () => {
    const window = 3_600_000;
    const limit = 1_000_000;
    const store = createMemoryStore();
    const options = { limit, window, algorithm: 'sliding-window-log' } as const;
    expect(() => createLimiter({ ...options, store })).not.toThrow();
    const request = { namespace: 'log', key: 'k', policies: [toPolicy(options, 'options')], capacities: [limit] };
    let allowed = 0;
    // One entry a millisecond, from START to START + 999,999: a log of a million entries.
    const copied = valuesCopiedBy(() => {
      const charge = { ...request, cost: 1, now: START };
      for (let i = 0; i < limit; i++, charge.now++) if (store.consumeOneSync(charge).allowed) allowed++;
    });
    expect(allowed).toBe(limit);
    // Doubling the buffer copies each of its 2n values about twice in all.
    expect(copied).toBeLessThan(4 * 2 * limit);

    const full = store.consumeOneSync({ ...request, cost: 1, now: START + limit });
    expect(outcomeOf(full)).toEqual({
      allowed: false,
      remaining: 0,
      resetAfterMs: window - 1,
      retryAfterMs: window - limit,
      delayMs: 0,
    });

    // The entries at START … START + 500,000 have left the window; 499,999 units remain in it.
    const now = START + 500_000 + window;
    const later = valuesCopiedBy(() => {
      expect(outcomeOf(store.consumeOneSync({ ...request, cost: 0, now }))).toMatchObject({ remaining: 500_001 });
      expect(outcomeOf(store.consumeOneSync({ ...request, cost: 1, now }))).toMatchObject({ remaining: 500_000 });
      expect(outcomeOf(store.consumeOneSync({ ...request, cost: 500_001, now }))).toMatchObject({
        allowed: false,
        retryAfterMs: 1,
      });
    });
    expect(later).toBe(0);
  });
});
