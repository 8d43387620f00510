import {
  createLimiter,
  type Decision,
  decide,
  type PolicyOutcome,
  type RateLimitStore,
  type StoreReply,
  type StoreRequest,
  storeKey,
  type Throttle,
} from '@sluice/core';
import { createMemoryStore } from '@sluice/memory';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { manualClock } from '../helpers/clock.js';
import { anyPolicyArb, optionsOf, START } from './support/meter.js';

// A one-policy limiter over a memory store core made decides on a path bound to it at creation;
// over a store that wraps one, through the store's `consumeOneSync`; both build the Decision
// without the lists a multi-policy one needs. A store without that method sends the same
// limiter down the general path. All three must give the same decisions, field for field.

const throttleArb: fc.Arbitrary<Throttle> = fc.oneof(
  fc.constant<Throttle>({ mode: 'hard' }),
  fc.constant<Throttle>({ mode: 'shadow' }),
  fc.integer({ min: 1, max: 200 }).map((p): Throttle => ({ mode: 'soft', overagePercent: p })),
  fc
    .tuple(fc.integer({ min: 1, max: 200 }), fc.double({ min: 0, max: 1, noNaN: true }))
    .map(([p, load]): Throttle => ({ mode: 'elastic', maxOveragePercent: p, load: () => load })),
);

// The store makes a key safe itself on this path, skipping the check for a key it holds as
// it is: a key too long to keep, and one that spells that key's made-safe form, must still
// count apart.
const LONG_KEY = 'k'.repeat(200);

const stepArb = fc.record({
  advance: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 5_000 })),
  key: fc.constantFrom('a', 'b', 'c{d}', LONG_KEY, storeKey(LONG_KEY)),
  // Up to beyond every capacity the policies can have, so a cost that never passes comes up.
  cost: fc.oneof(fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 60 })),
  peek: fc.boolean(),
});

/** The memory store without its one-policy method: the limiter's general synchronous path. */
function generalStore(): RateLimitStore {
  const { consumeOneSync: _leftOut, ...general } = createMemoryStore({ maxKeys: 10 });
  return general;
}

describe('the one-policy fast path', () => {
  it('decides exactly as the general path, for every algorithm and throttle mode', async () => {
    await fc.assert(
      fc.asyncProperty(
        anyPolicyArb,
        throttleArb,
        fc.array(stepArb, { maxLength: 40 }),
        async (policy, throttle, steps) => {
          // Elastic mode lends a queued policy nothing, so a one-policy limiter refuses the pair.
          fc.pre(throttle.mode !== 'elastic' || policy.maxDelayMs === 0);
          const clock = manualClock(START);
          const options = { ...optionsOf(policy), throttle, clock };
          const bound = createLimiter({ ...options, store: createMemoryStore({ maxKeys: 10 }) });
          const wrapped = createLimiter({ ...options, store: { ...createMemoryStore({ maxKeys: 10 }) } });
          const general = createLimiter({ ...options, store: generalStore() });
          for (const { advance, key, cost, peek } of steps) {
            clock.advance(advance);
            const ask = (limiter: typeof bound): Promise<Decision> =>
              peek ? limiter.peek(key) : limiter.consume(key, { cost });
            const expected = await ask(general);
            expect(await ask(bound)).toStrictEqual(expected);
            expect(await ask(wrapped)).toStrictEqual(expected);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it("a key that spells another key's made-safe form does not share its count", async () => {
    const limiter = createLimiter({ limit: 1, window: '1m', store: createMemoryStore(), clock: () => START });
    expect((await limiter.consume(LONG_KEY)).allowed).toBe(true);
    expect((await limiter.consume(storeKey(LONG_KEY))).allowed).toBe(true);
    expect((await limiter.consume(LONG_KEY)).allowed).toBe(false);
    expect((await limiter.peek(storeKey(LONG_KEY))).remaining).toBe(0);
    await limiter.reset(LONG_KEY);
    expect((await limiter.consume(LONG_KEY)).allowed).toBe(true);
  });

  it('is the path a one-policy limiter takes on the memory store', async () => {
    const store = createMemoryStore();
    let asked = 0;
    const counted: RateLimitStore = {
      ...store,
      consumeOneSync: (request) => {
        asked++;
        return store.consumeOneSync(request);
      },
    };
    const limiter = createLimiter({ limit: 2, window: '1s', store: counted });
    await limiter.consume('a');
    expect(asked).toBe(1);
  });
});

// docs/stores.md: a store is handed client keys already made safe, fast paths included, unless
// it says it takes them as given (`takesKeysAsGiven`, as core's memory store does, to skip the
// check for a key it holds).
describe("a custom in-process store's client keys", () => {
  it('are made safe on every call, consumeOneSync included', async () => {
    const seen: string[] = [];
    const states = new Map<string, unknown[]>();
    const decideOn = (request: StoreRequest) => {
      seen.push(request.key);
      const id = `${request.namespace}|${request.key}`;
      const reply = decide(
        (states.get(id) ?? [undefined]) as never,
        request.policies,
        request.capacities,
        request.cost,
        request.now ?? 0,
      );
      if (reply.next !== undefined) states.set(id, reply.next as unknown[]);
      return { allowed: reply.allowed, now: request.now ?? 0, outcomes: reply.outcomes };
    };
    const store: RateLimitStore = {
      name: 'custom',
      local: true,
      consumeSync: decideOn,
      consumeOneSync: (request) => decideOn(request).outcomes[0] as PolicyOutcome,
      consume: async (request) => decideOn(request),
      reset: async () => {},
      refund: async () => {},
    };
    const limiter = createLimiter({ limit: 3, window: '1m', store, clock: () => 1_700_000_000_000 });
    const keys = ['1.2.3.4', 'user{a}\nb', 'x'.repeat(10_000)];
    for (const key of keys) await limiter.consume(key);
    expect(seen).toEqual(keys.map(storeKey));
  });
});

describe('a store that takes keys as given', () => {
  it('gets them as given in consumeSync, and safe in every other call', async () => {
    const seen: [string, string][] = [];
    const passed = (request: StoreRequest): StoreReply => ({
      allowed: true,
      now: 0,
      outcomes: request.policies.map(() => ({
        allowed: true,
        remaining: 1,
        resetAfterMs: 1,
        retryAfterMs: 0,
        delayMs: 0,
      })),
    });
    const store: RateLimitStore = {
      name: 'given-in-process',
      local: true,
      takesKeysAsGiven: true,
      consumeSync: (request) => {
        seen.push(['consumeSync', request.key]);
        return passed(request);
      },
      consume: async (request) => {
        seen.push(['consume', request.key]);
        return passed(request);
      },
      reset: async () => {},
      refund: async () => {},
    };
    const limiter = createLimiter({
      policies: [
        { name: 'second', limit: 3, window: '1s' },
        { name: 'minute', limit: 30, window: '1m' },
      ],
      store,
    });
    const key = 'user{a}\nb';
    await limiter.consume(key);
    await limiter.peek(key);
    expect(seen).toEqual([
      ['consumeSync', key],
      ['consume', storeKey(key)],
    ]);
  });

  it('gets them as given in decideAtOnce only, and safe in every other call', async () => {
    const seen: [string, string][] = [];
    const passed = {
      allowed: true,
      now: 0,
      outcomes: [{ allowed: true, remaining: 1, resetAfterMs: 1, retryAfterMs: 0, delayMs: 0 }],
    };
    const store: RateLimitStore = {
      name: 'given',
      takesKeysAsGiven: true,
      // Decides nothing at once, so every decision goes on to `consume`.
      decideAtOnce: (request) => {
        seen.push(['decideAtOnce', request.key]);
        return undefined;
      },
      consume: async (request) => {
        seen.push(['consume', request.key]);
        return passed;
      },
      reset: async (_namespace, key) => {
        seen.push(['reset', key]);
      },
      refund: async (request) => {
        seen.push(['refund', request.key]);
      },
    };
    const limiter = createLimiter({ limit: 3, window: '1m', store });
    const key = 'user{a}\nb';
    await limiter.consume(key);
    await limiter.peek(key);
    await limiter.refund(key, 1);
    await limiter.reset(key);
    const safe = storeKey(key);
    expect(seen).toEqual([
      ['decideAtOnce', key],
      ['consume', safe],
      ['consume', safe],
      ['refund', safe],
      ['reset', safe],
    ]);
  });
});
