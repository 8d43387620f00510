import { createLimiter, createMemoryStore, decide, type Policy, refundStates, type State } from '@sluice/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { manualClock } from '../../helpers/clock.js';
import { anyPolicyArb, optionsOf, START, statedRetryAfterMs } from '../support/meter.js';

// The memory store packs every limiter's states for one client key into one flat array and
// rewrites, grows and shrinks its segments in place. Whatever the interleaving, each limiter
// must see exactly what core's reference decision gives on its own states.

const opArb = (limiters: number) =>
  fc.record({
    limiter: fc.nat({ max: limiters - 1 }),
    key: fc.constantFrom('a', 'b'),
    kind: fc.constantFrom('consume', 'consume', 'consume', 'peek', 'refund', 'reset'),
    cost: fc.integer({ min: 1, max: 5 }),
    advance: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 3_000 })),
  });

describe('limiters sharing one memory store', () => {
  it('decide exactly as the reference on their own states, for any interleaving', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc
          .array(fc.array(anyPolicyArb, { minLength: 1, maxLength: 2 }), { minLength: 2, maxLength: 3 })
          .chain((sets) => fc.tuple(fc.constant(sets), fc.array(opArb(sets.length), { maxLength: 50 }))),
        async ([sets, ops]) => {
          const clock = manualClock(START);
          const store = createMemoryStore({ maxKeys: 10 });
          const limiters = sets.map((policies, l) =>
            createLimiter({ policies: policies.map((p, i) => optionsOf(p, `p${i}`)), clock, store, prefix: `l${l}` }),
          );
          const model = new Map<string, (State | undefined)[]>();
          for (const { limiter: li, key, kind, cost, advance } of ops) {
            clock.advance(advance);
            const now = clock();
            const policies = sets[li] as Policy[];
            const caps = policies.map((p) => p.capacity);
            const id = `${li}|${key}`;
            const states = model.get(id) ?? policies.map(() => undefined);
            const limiter = limiters[li] as ReturnType<typeof createLimiter>;
            if (kind === 'reset') {
              await limiter.reset(key);
              model.delete(id);
            } else if (kind === 'refund') {
              await limiter.refund(key, cost);
              model.set(id, refundStates(states, policies, caps, cost, now, { at: now, by: now }));
            } else {
              const charge = kind === 'consume' ? cost : 0;
              const decision = kind === 'consume' ? await limiter.consume(key, { cost }) : await limiter.peek(key);
              const reference = decide(states, policies, caps, charge, now);
              if (reference.next !== undefined) model.set(id, reference.next);
              const seen = decision.policies.map((p) => [p.remaining, p.resetAfterMs, p.retryAfterMs]);
              const stated = reference.outcomes.map((o, i) => {
                const wait = reference.allowed
                  ? o.retryAfterMs
                  : statedRetryAfterMs(policies[i] as Policy, caps[i] as number, charge, o.retryAfterMs);
                return [o.remaining, o.resetAfterMs, wait];
              });
              expect(seen).toEqual(stated);
              if (kind === 'consume') expect(decision.allowed).toBe(reference.allowed);
            }
          }
          expect(store.size).toBeLessThanOrEqual(2);
        },
      ),
      { numRuns: 150 },
    );
  });
});
