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

// Names as limiters accept them, and names JSON must escape (a Decision is public: anyone
// may build one).
const policyName = fc.oneof(
  fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/),
  fc.string({
    unit: fc.constantFrom('a', '-', '1', '"', '\\', 'é', ' ', '\n', '\ud800', '~', '\u007f'),
    maxLength: 12,
  }),
);

describe('problemJson', () => {
  it('is the problem document, serialised, for every kind of refusal', () => {
    fc.assert(
      fc.property(
        fc.constantFrom<Decision['reason']>(undefined, 'store-unavailable', 'cost-exceeds-limit'),
        fc.oneof(fc.integer({ min: 0, max: 10 ** 12 }), fc.constant(Number.POSITIVE_INFINITY)),
        fc.array(fc.tuple(policyName, fc.boolean()), { maxLength: 4 }),
        (reason, retryAfterMs, refused) => {
          const d = decision(reason, retryAfterMs, refused);
          expect(problemJson(d)).toBe(JSON.stringify(problemFor(d)));
          expect(problemStatus(d)).toBe(problemFor(d).status);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('stays the document along runs of refusals that repeat or change the policy and the wait', () => {
    // A small domain, so that consecutive refusals often match the last body and often do not.
    const refusal = fc.tuple(
      fc.constantFrom<Decision['reason']>(undefined, undefined, 'cost-exceeds-limit'),
      fc.constantFrom(999, 1000, 1001, 61_000),
      fc.constantFrom<[string, boolean][]>(
        [['a', false]],
        [['b', false]],
        [['a', true]],
        [
          ['a', false],
          ['b', false],
        ],
      ),
    );
    fc.assert(
      fc.property(fc.array(refusal, { minLength: 2, maxLength: 12 }), (run) => {
        for (const [reason, retryAfterMs, refused] of run) {
          const d = decision(reason, retryAfterMs, refused);
          expect(problemJson(d)).toBe(JSON.stringify(problemFor(d)));
        }
      }),
      { numRuns: 500 },
    );
  });
});
