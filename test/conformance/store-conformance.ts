import { randomUUID } from 'node:crypto';
import { algorithmNames, type RateLimitStore, type StoreRequest } from '@sluice/core';
import fc from 'fast-check';
import { expect, it } from 'vitest';
import { advanceMs, type PolicySet, policySet, type Step, shortWindowMs, trace } from './arbitraries.js';
import { referenceModel } from './reference-model.js';

export interface ConformanceRuns {
  /** fast-check runs per algorithm, and for mixed sets, on an injected clock. */
  injected: number;
  /** Runs on the store's own clock (`now` left undefined). */
  storeClock: number;
}

const START_MS = 1_700_000_000_000;

/**
 * The suite every store must pass: for random traces of (key, cost, time) its replies equal
 * those of core's pure reference run on its own never-expiring states. Declare it inside a
 * `describe`; `store()` is read when the tests run, so it may be set up in `beforeAll`.
 */
export function storeConformance(
  store: () => RateLimitStore,
  runs: ConformanceRuns = { injected: 60, storeClock: 20 },
) {
  for (const algorithm of algorithmNames) {
    it(`${algorithm}: every decision equals the reference on an injected clock`, async () => {
      await fc.assert(
        fc.asyncProperty(policySet(fc.constant(algorithm), 2), trace, startOffset, (set, steps, offset) =>
          replay(store(), set, steps, START_MS + offset),
        ),
        { numRuns: runs.injected },
      );
    });
  }

  it('mixed algorithms: one all-or-nothing decision equals the reference', async () => {
    await fc.assert(
      fc.asyncProperty(policySet(fc.constantFrom(...algorithmNames), 4), trace, startOffset, (set, steps, offset) =>
        replay(store(), set, steps, START_MS + offset),
      ),
      { numRuns: runs.injected * 2 },
    );
  });

  it('decisions, refunds and resets asked all at once equal the reference taken in the order asked', async () => {
    await fc.assert(
      fc.asyncProperty(policySet(fc.constantFrom(...algorithmNames), 3), trace, startOffset, (set, steps, offset) =>
        replayAtOnce(store(), set, steps, START_MS + offset),
      ),
      { numRuns: runs.injected },
    );
  });

  it("the store's own clock: each reply equals the reference at the reply's `now`", async () => {
    const noRefunds = trace.map((steps) => steps.filter((s) => s.operation !== 'refund'));
    await fc.assert(
      fc.asyncProperty(policySet(fc.constantFrom(...algorithmNames), 3, shortWindowMs), noRefunds, (set, steps) =>
        replay(store(), set, steps, undefined),
      ),
      { numRuns: runs.storeClock },
    );
  });

  it('a cost of 0 charges nothing and an oversized cost is refused without spending', async () => {
    const s = store();
    const namespace = `c-${randomUUID()}`;
    await fc.assert(
      fc.asyncProperty(policySet(fc.constantFrom(...algorithmNames), 3), async ({ policies, capacities }) => {
        const base = { namespace, key: randomUUID(), policies, capacities, now: START_MS };
        const before = await s.consume({ ...base, cost: 0 });
        // Beyond every capacity, and beyond what a queue could hold back.
        const huge =
          Math.max(
            ...policies.map((p, i) => (capacities[i] as number) + Math.ceil((p.maxDelayMs * p.limit) / p.windowMs)),
          ) + 1;
        const refused = await s.consume({ ...base, cost: huge });
        expect(refused.allowed).toBe(false);
        expect(await s.consume({ ...base, cost: 0 })).toEqual(before);
      }),
      { numRuns: 30 },
    );
  });
}

const startOffset = fc.integer({ min: 0, max: 86_400_000 });

/** What the store is asked for one step of a trace (a peek asks at cost 0). */
const stepRequest = (namespace: string, set: PolicySet, step: Step, now: number | undefined): StoreRequest => ({
  namespace,
  key: step.key,
  policies: set.policies,
  capacities: set.capacities,
  cost: step.operation === 'peek' ? 0 : step.cost,
  now,
  ...(step.operation === 'refund' && step.chargeAge > 0
    ? { chargeAgeMs: step.chargeAge, chargeSpanMs: Math.min(step.chargeSpan, step.chargeAge) }
    : {}),
});

/** Plays a trace, asking for every step before any answer comes back. */
async function replayAtOnce(store: RateLimitStore, set: PolicySet, steps: Step[], startMs: number) {
  const namespace = `c-${randomUUID()}`;
  const model = referenceModel();
  let now = startMs;
  const asked = steps.map((step) => {
    now += advanceMs(step, set.policies);
    const request = stepRequest(namespace, set, step, now);
    if (step.operation === 'reset') {
      model.reset(step.key);
      return store.reset(namespace, step.key, set.policies);
    }
    if (step.operation === 'refund') {
      model.refund(request as StoreRequest & { now: number });
      return store.refund(request);
    }
    const expected = model.consume(request as StoreRequest & { now: number });
    return store.consume(request).then((got) => expect(got, JSON.stringify(step)).toEqual(expected));
  });
  await Promise.all(asked);
}

/** Plays one trace against the store and the reference; `startMs` undefined uses the store's clock. */
async function replay(store: RateLimitStore, set: PolicySet, steps: Step[], startMs: number | undefined) {
  const namespace = `c-${randomUUID()}`;
  const model = referenceModel();
  let now = startMs;
  for (const [i, step] of steps.entries()) {
    if (now !== undefined) now += advanceMs(step, set.policies);
    const request = stepRequest(namespace, set, step, now);
    if (step.operation === 'reset') {
      await store.reset(namespace, step.key, set.policies);
      model.reset(step.key);
    } else if (step.operation === 'refund') {
      await store.refund(request);
      model.refund({ ...request, now: now as number });
    } else {
      const got = await store.consume(request);
      if (now !== undefined) expect(got.now, 'the injected now comes back').toBe(now);
      expect(got, `step ${i}: ${JSON.stringify(step)}`).toEqual(model.consume({ ...request, now: got.now }));
    }
  }
}
