import { type Decision, problemFor, problemJson, problemStatus } from '@sluice/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

const decision = (reason: Decision['reason'], retryAfterMs: number, refused: [string, boolean][]): Decision =>
  ({
    allowed: false,
    limit: 10,
    remaining: 0,
    resetAfterMs: retryAfterMs,
    retryAfterMs,
    delayMs: 0,
    reason,
    key: 'k',
    policies: refused.map(([name, allowed]) => ({ name, allowed })),
  }) as unknown as Decision;

describe('problemJson', () => {
  it('is the problem document, serialised, for every kind of refusal', () => {
    const name = fc.string({ unit: fc.constantFrom('a', '-', '1', '"', '\\', 'é', ' '), maxLength: 12 });
    fc.assert(
      fc.property(
        fc.constantFrom<Decision['reason']>(undefined, 'store-unavailable', 'cost-exceeds-limit'),
        fc.oneof(fc.integer({ min: 0, max: 10 ** 12 }), fc.constant(Number.POSITIVE_INFINITY)),
        fc.array(fc.tuple(name, fc.boolean()), { maxLength: 4 }),
        (reason, retryAfterMs, refused) => {
          const d = decision(reason, retryAfterMs, refused);
          expect(problemJson(d)).toBe(JSON.stringify(problemFor(d)));
          expect(problemStatus(d)).toBe(problemFor(d).status);
        },
      ),
      { numRuns: 2000 },
    );
  });
});
