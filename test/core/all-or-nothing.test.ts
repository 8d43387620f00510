import { algorithms, createLimiter, type Decision, type Policy, type State } from '@sluice/core';
import { createMemoryStore } from '@sluice/memory';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { manualClock } from '../helpers/clock.js';
import {
  anyPolicyArb,
  optionsOf,
  policyTraceArb,
  START,
  type Step,
  statedRetryAfterMs,
  VARIANTS,
} from './support/meter.js';

function limiterFor(policies: readonly Policy[]) {
  const clock = manualClock(START);
  const limiter = createLimiter({
    policies: policies.map((p, i) => optionsOf(p, `p${i}`)),
    clock,
    store: createMemoryStore({ maxKeys: 10 }),
  });
  return {
    async run(trace: readonly Step[]): Promise<Decision[]> {
      const decisions: Decision[] = [];
      for (const { advance, cost } of trace) {
        clock.advance(advance);
        decisions.push(await limiter.consume('client', { cost }));
      }
      return decisions;
    },
  };
}

describe('a rejected request never changes state', () => {
  it.each(VARIANTS)('%s: later decisions are the same as if the rejected requests were never sent', async (variant) => {
    await fc.assert(
      fc.asyncProperty(policyTraceArb(variant, 8, 40), async ([policy, trace]) => {
        const withRejections = await limiterFor([policy]).run(trace);
        // Drop the refused requests but keep their waits, so the others arrive at the same times.
        const kept: Step[] = [];
        let carried = 0;
        trace.forEach((step, i) => {
          if (withRejections[i]?.allowed) {
            kept.push({ advance: step.advance + carried, cost: step.cost });
            carried = 0;
          } else carried += step.advance;
        });
        const without = await limiterFor([policy]).run(kept);
        expect(without).toEqual(withRejections.filter((d) => d.allowed));
      }),
      { numRuns: 60 },
    );
  });
});

describe('several policies decide all or nothing', () => {
  it('every policy is charged when all allow, none when any refuses (model check against each policy alone)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(anyPolicyArb, { minLength: 1, maxLength: 3 }),
        fc.array(fc.record({ advance: fc.integer({ min: 0, max: 1_500 }), cost: fc.integer({ min: 1, max: 6 }) }), {
          maxLength: 40,
        }),
        async (policies, trace) => {
          const decisions = await limiterFor(policies).run(trace);
          // The model: each policy on its own reference algorithm, charged only when every one allows.
          const states: (State | undefined)[] = policies.map(() => undefined);
          let now = START;
          trace.forEach(({ advance, cost }, i) => {
            now += advance;
            const evaluations = policies.map((p, j) =>
              algorithms[p.algorithm].evaluate(states[j], p, p.capacity, cost, now),
            );
            const allowed = evaluations.every((e) => e.allowed);
            const decision = decisions[i] as Decision;
            expect(decision.allowed).toBe(allowed);
            const shown = evaluations.map((e, j) => {
              const p = policies[j] as Policy;
              // A policy that allowed a refused request was not charged: it shows what a peek shows.
              const uncharged = !allowed && e.allowed;
              const seen = uncharged ? algorithms[p.algorithm].evaluate(states[j], p, p.capacity, 0, now) : e;
              return {
                allowed: e.allowed,
                remaining: seen.remaining,
                resetAfterMs: seen.resetAfterMs,
                retryAfterMs: allowed ? e.retryAfterMs : statedRetryAfterMs(p, p.capacity, cost, e.retryAfterMs),
              };
            });
            if (allowed)
              evaluations.forEach((e, j) => {
                states[j] = e.next;
              });
            expect(
              decision.policies.map(({ allowed, remaining, resetAfterMs, retryAfterMs }) => ({
                allowed,
                remaining,
                resetAfterMs,
                retryAfterMs,
              })),
            ).toEqual(shown);
          });
        },
      ),
      { numRuns: 150 },
    );
  });

  it('a refusal by the daily quota leaves the per-second quota uncharged', async () => {
    const clock = manualClock(START);
    const limiter = createLimiter({
      policies: [
        { name: 'second', limit: 10, window: '1s' },
        { name: 'day', limit: 3, window: '1d', algorithm: 'fixed-window' },
      ],
      clock,
      store: createMemoryStore({ maxKeys: 10 }),
    });
    for (let i = 0; i < 3; i++) expect((await limiter.consume('k')).allowed).toBe(true);
    const refused = await limiter.consume('k', { cost: 2 });
    expect(refused.allowed).toBe(false);
    expect(refused.policies.map((p) => [p.name, p.allowed, p.remaining])).toEqual([
      ['second', true, 7],
      ['day', false, 0],
    ]);
    // Had the refusal charged the per-second policy, 5 would be left here.
    expect((await limiter.peek('k')).policies.map((p) => p.remaining)).toEqual([7, 0]);
    // The top-level figures follow the policy that refused, and the longest wait.
    expect(refused.limit).toBe(3);
    expect(refused.retryAfterMs).toBe(refused.policies[1]?.retryAfterMs);
  });
});
