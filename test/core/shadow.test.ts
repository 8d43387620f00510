import { createLimiter, type Decision, type Policy, type RateLimitStore, type StoreReply } from '@sluice/core';
import { createMemoryStore } from '@sluice/memory';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { manualClock } from '../helpers/clock.js';
import { anyPolicyArb, optionsOf, policyOf, START } from './support/meter.js';

/** A refusal marked as a store lets it through in its own shadow mode (`StoreReply.overLimit`). */
const marked = (reply: StoreReply): StoreReply => (reply.allowed ? reply : { ...reply, overLimit: 'shadow' });

/** `store` as a store in another process that lets every refusal through, as a decision service in shadow mode does. */
function markingRefusals(store: RateLimitStore): RateLimitStore {
  return {
    name: 'lets refusals through',
    consume: async (request) => marked(await store.consume(request)),
    reset: (namespace, key, policies) => store.reset(namespace, key, policies),
    refund: (request) => store.refund(request),
  };
}

/** The same store deciding in-process, through `consumeSync`. */
function markingRefusalsAtOnce(store: RateLimitStore): RateLimitStore {
  const consumeSync = store.consumeSync?.bind(store) as NonNullable<RateLimitStore['consumeSync']>;
  return {
    ...markingRefusals(store),
    local: true,
    consumeSync: (request) => marked(consumeSync(request)),
  };
}

function pair(policies: readonly Policy[]) {
  const clock = manualClock(START);
  const make = (throttle: { mode: 'hard' } | { mode: 'shadow' }, store: RateLimitStore = createMemoryStore()) =>
    createLimiter({ policies: policies.map((p, i) => optionsOf(p, `p${i}`)), clock, throttle, store });
  return {
    clock,
    hard: make({ mode: 'hard' }),
    shadow: make({ mode: 'shadow' }),
    // Hard limiters on a store whose own shadow mode lets its refusals through.
    markedByStore: make({ mode: 'hard' }, markingRefusals(createMemoryStore())),
    markedAtOnce: make({ mode: 'hard' }, markingRefusalsAtOnce(createMemoryStore())),
  };
}

describe('shadow throttling', () => {
  it('never refuses, reports exactly what hard mode decides, and charges only what hard mode charges', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(anyPolicyArb, { minLength: 1, maxLength: 2 }),
        fc.array(fc.record({ advance: fc.integer({ min: 0, max: 1_000 }), cost: fc.integer({ min: 1, max: 30 }) }), {
          maxLength: 40,
        }),
        async (policies, trace) => {
          const { clock, hard, shadow, markedByStore, markedAtOnce } = pair(policies);
          for (const { advance, cost } of trace) {
            clock.advance(advance);
            const enforced = await hard.consume('k', { cost });
            const watched = await shadow.consume('k', { cost });
            // A refusal the store let through reads as shadow mode's; a pass as hard mode's.
            expect(await markedByStore.consume('k', { cost })).toEqual(enforced.allowed ? enforced : watched);
            expect(await markedAtOnce.consume('k', { cost })).toEqual(enforced.allowed ? enforced : watched);
            expect(watched.allowed).toBe(true);
            expect(watched.retryAfterMs).toBe(0);
            if (enforced.allowed) {
              // A request hard mode's queue would hold is let through at once.
              expect(watched).toEqual({ ...enforced, delayMs: 0 });
            } else {
              // Same figures, per-policy refusals kept, only the verdict overridden and marked.
              const expected: Decision = { ...enforced, allowed: true, retryAfterMs: 0, overLimit: 'shadow' };
              expect(watched).toEqual(expected);
              expect(watched.policies.some((p) => !p.allowed)).toBe(true);
            }
          }
        },
      ),
      { numRuns: 150 },
    );
  });

  // Regression: shadow mode let refusals through but held the requests a queue took, for up
  // to its maxDelayMs, while those further over the limit passed at once.
  it('holds back no request a queue would hold', async () => {
    const { hard, shadow } = pair([
      policyOf({ limit: 1, window: '1s', algorithm: 'gcra', queue: { maxDelayMs: '3s' } }),
    ]);
    const held: number[] = [];
    for (let i = 0; i < 6; i++) {
      const enforced = await hard.consume('k');
      held.push(enforced.delayMs);
      const watched = await shadow.consume('k');
      expect(watched).toMatchObject({ allowed: true, delayMs: 0 });
      // Charged as hard mode charges: a request its queue takes is charged, not marked.
      expect(watched.overLimit).toBe(enforced.allowed ? undefined : 'shadow');
    }
    expect(held).toEqual([0, 1000, 2000, 3000, 0, 0]);
  });

  it('a cost that can never pass is let through, marked, with its reason', async () => {
    const { shadow } = pair([policyOf({ limit: 5, window: '1s', algorithm: 'fixed-window' })]);
    const decision = await shadow.consume('k', { cost: 6 });
    expect(decision).toMatchObject({
      allowed: true,
      overLimit: 'shadow',
      reason: 'cost-exceeds-limit',
      retryAfterMs: 0,
    });
    expect(decision.policies[0]?.allowed).toBe(false);
    expect((await shadow.peek('k')).remaining).toBe(5);
  });
});
