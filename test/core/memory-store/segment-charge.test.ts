import {
  createLimiter,
  createMemoryStore,
  decide,
  type MemoryStore,
  type PolicyOptions,
  type RateLimitStore,
  type State,
  type StoreRequest,
  toPolicy,
} from '@sluice/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type PolicySet, policySet } from '../../conformance/arbitraries.js';
import { START } from '../support/meter.js';

// A charge of several policies whose states are all of fixed size is decided where the client's
// states sit, on a copy written back only when every policy allows. Whatever the client holds
// besides (another limiter's segment, a row of a one-policy limiter) and however the clock
// moves, each reply must be the reference's on that limiter's own states.

const fixedSizeAlgorithms = fc.constantFrom(
  'token-bucket' as const,
  'leaky-bucket' as const,
  'gcra' as const,
  'fixed-window' as const,
  'sliding-window-counter' as const,
);

const stepArb = fc.record({
  limiter: fc.nat({ max: 2 }),
  key: fc.constantFrom('a', 'b', 'c'),
  cost: fc.oneof(
    { weight: 6, arbitrary: fc.integer({ min: 1, max: 4 }) },
    { weight: 1, arbitrary: fc.constant(0) },
    { weight: 1, arbitrary: fc.integer({ min: 50, max: 5_000 }) },
  ),
  // Steps back too: a window algorithm then decides as of the window its state was written in.
  advance: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 3_000 }), fc.integer({ min: -2_000, max: -1 })),
});

describe('a charge of several fixed-size policies on the memory store', () => {
  it("replies as the reference does on each limiter's own states, beside other limiters' states", () => {
    const oneFixed = fixedSizeAlgorithms.chain((algorithm) => policySet(fc.constant(algorithm), 1));
    fc.assert(
      fc.property(
        // Two limiters of several policies and one of one policy, whose clients sit in rows.
        fc.tuple(policySet(fixedSizeAlgorithms, 4), policySet(fixedSizeAlgorithms, 3), oneFixed),
        fc.array(stepArb, { maxLength: 60 }),
        (sets, steps) => {
          const store = createMemoryStore({ maxKeys: 3 });
          const model = new Map<string, (State | undefined)[]>();
          let now = START;
          for (const { limiter, key, cost, advance } of steps) {
            now += advance;
            const { policies, capacities } = sets[limiter] as PolicySet;
            const request: StoreRequest = { namespace: `l${limiter}`, key, policies, capacities, cost, now };
            const reference = decide(model.get(`${limiter}|${key}`) ?? [], policies, capacities, cost, now);
            if (reference.next !== undefined) model.set(`${limiter}|${key}`, reference.next);
            expect(store.consumeSync(request)).toEqual({
              allowed: reference.allowed,
              now,
              outcomes: reference.outcomes,
            });
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('leaves every state as it was when one policy refuses', () => {
    // A last policy of one unit a window refuses the second charge; the others would allow it.
    const tight = toPolicy({ name: 'tight', limit: 1, window: '1h', algorithm: 'fixed-window' }, 'tight');
    fc.assert(
      fc.property(policySet(fixedSizeAlgorithms, 3), ({ policies, capacities }) => {
        const store = createMemoryStore();
        const all = { policies: [...policies, tight], capacities: [...capacities, 1] };
        const ask = (cost: number) => store.consumeSync({ namespace: 'n', key: 'k', ...all, cost, now: START });
        expect(ask(1).allowed).toBe(true);
        const before = ask(0);
        const refused = ask(1);
        expect(refused.allowed).toBe(false);
        expect(refused.outcomes.at(-1)?.allowed).toBe(false);
        expect(ask(0)).toEqual(before);
        // Each policy that allowed reports its quota as it stands, uncharged.
        refused.outcomes.forEach((outcome, i) => {
          if (outcome.allowed) expect(outcome.remaining).toBe(before.outcomes[i]?.remaining);
        });
      }),
      { numRuns: 100 },
    );
  });

  it('finds one client by the key a limiter gives and by its safe form, a hostile key included', async () => {
    const store = createMemoryStore();
    const limiter = createLimiter({
      policies: [
        { name: 'second', limit: 5, window: '1s' },
        { name: 'minute', limit: 50, window: '1m' },
      ],
      store,
      clock: () => START,
    });
    const keys = ['1.2.3.4', 'user{a}\nb', 'x'.repeat(200)];
    for (const key of keys) {
      // Decided on the key as given (`consumeSync`), peeked on its safe form (`consume`).
      await limiter.consume(key, { cost: 2 });
      await limiter.consume(key);
      expect((await limiter.peek(key)).policies.map((p) => p.remaining)).toEqual([2, 47]);
    }
    expect(store.size).toBe(keys.length);
  });

  it('counts one client under one entry through any store that wraps the memory store', async () => {
    const wrappers: [string, (store: MemoryStore) => RateLimitStore][] = [
      ['spread', (store) => ({ ...store })],
      ['spread, keys as given refused', (store) => ({ ...store, takesKeysAsGiven: false })],
      [
        'calling through',
        (store) => ({
          ...store,
          consumeSync: (request) => store.consumeSync(request),
          consumeOneSync: (request) => store.consumeOneSync(request),
        }),
      ],
    ];
    const key = 'user{a}\nb';
    for (const [label, wrap] of wrappers) {
      for (const policies of [[{ name: 'minute', limit: 5, window: '1m' }] as PolicyOptions[], twoPolicies]) {
        const store = createMemoryStore();
        const limiter = createLimiter({ policies, store: wrap(store), clock: () => START });
        await limiter.consume(key, { cost: 2 });
        await limiter.consume(key);
        const spent = (await limiter.peek(key)).policies.map((p) => p.remaining);
        expect(spent, label).toEqual(policies.map((p) => p.limit - 3));
        await limiter.refund(key, 1);
        expect(
          (await limiter.peek(key)).policies.map((p) => p.remaining),
          label,
        ).toEqual(policies.map((p) => p.limit - 2));
        await limiter.reset(key);
        expect(
          (await limiter.peek(key)).policies.map((p) => p.remaining),
          label,
        ).toEqual(policies.map((p) => p.limit));
        expect(store.size, label).toBeLessThanOrEqual(1);
      }
    }
  });
});

const twoPolicies: PolicyOptions[] = [
  { name: 'second', limit: 5, window: '1s' },
  { name: 'minute', limit: 50, window: '1m' },
];
