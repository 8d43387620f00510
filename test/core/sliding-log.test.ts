import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createMeter, policyOf, START, traceArb, windowArb } from './support/meter.js';

/** Total cost admitted in the half-open interval [from, from + windowMs). */
function costWithin(admitted: readonly { at: number; cost: number }[], from: number, windowMs: number): number {
  let total = 0;
  for (const { at, cost } of admitted) if (at >= from && at < from + windowMs) total += cost;
  return total;
}

describe('sliding-window-log', () => {
  it('never admits more than L cost units in any window of length W, aligned or not', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 15 }),
        windowArb.chain((w) => fc.tuple(fc.constant(w), traceArb(w, 6, 60))),
        (limit, [windowMs, trace]) => {
          const meter = createMeter(policyOf({ limit, window: windowMs, algorithm: 'sliding-window-log' }));
          const admitted: { at: number; cost: number }[] = [];
          let now = START;
          for (const { advance, cost } of trace) {
            now += advance;
            if (meter.consume(cost, now).allowed) admitted.push({ at: now, cost });
          }
          // The busiest window of length W starts at some admitted request, so checking a window
          // starting at every admission time checks every window there is.
          for (const { at } of admitted) expect(costWithin(admitted, at, windowMs)).toBeLessThanOrEqual(limit);
        },
      ),
      { numRuns: 400 },
    );
  });

  it('admits a request as soon as the cost it needs has left the window (it is exact, not just safe)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 15 }),
        windowArb.chain((w) => fc.tuple(fc.constant(w), traceArb(w, 6, 60))),
        (limit, [windowMs, trace]) => {
          const meter = createMeter(policyOf({ limit, window: windowMs, algorithm: 'sliding-window-log' }));
          const admitted: { at: number; cost: number }[] = [];
          let now = START;
          for (const { advance, cost } of trace) {
            now += advance;
            const inWindow = costWithin(admitted, now - windowMs + 1, windowMs);
            const outcome = meter.consume(cost, now);
            expect(outcome.allowed).toBe(inWindow + cost <= limit);
            if (outcome.allowed) admitted.push({ at: now, cost });
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
