import { randomUUID } from 'node:crypto';
import {
  type AlgorithmName,
  createLimiter,
  type Decision,
  type Limiter,
  type PolicyOptions,
  storeKey,
} from '@sluice/core';
import { createRedisStore } from '@sluice/redis';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { policyOptions } from '../conformance/arbitraries.js';
import { ALL_ALGORITHMS } from '../helpers/algorithms.js';
import { manualClock } from '../helpers/clock.js';
import { standaloneRedis } from '../helpers/redis-env.js';
import { proxiedRedisForSuite } from '../helpers/redis-proxy.js';

const target = await standaloneRedis();

type Step =
  | { op: 'consume'; key: string; cost: number }
  | { op: 'peek' | 'reset'; key: string }
  | { op: 'refund'; key: string; cost: number }
  | { op: 'advance'; ms: number };

// The cache takes client keys as given at once (`takesKeysAsGiven`) and makes them safe
// itself, skipping that for a key it holds as it is: a key it must hash, one too long to keep,
// and one that spells that key's made-safe form must each count apart.
const LONG_KEY = 'k'.repeat(200);
const keyArbitrary = fc.constantFrom('a', 'b', 'c{d}', LONG_KEY, storeKey(LONG_KEY));

const costArbitrary = fc.oneof({ weight: 3, arbitrary: fc.constant(1) }, fc.integer({ min: 2, max: 3 }));

/** Mostly requests close together, so refusals repeat within their wait; now and then a long step. */
const stepArbitrary = (windowMs: number): fc.Arbitrary<Step> =>
  fc.oneof(
    {
      weight: 10,
      arbitrary: fc.record({
        op: fc.constant('consume' as const),
        key: keyArbitrary,
        cost: costArbitrary,
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({ op: fc.constantFrom('peek' as const, 'reset' as const), key: keyArbitrary }),
    },
    {
      weight: 1,
      arbitrary: fc.record({ op: fc.constant('refund' as const), key: keyArbitrary, cost: costArbitrary }),
    },
    {
      weight: 4,
      arbitrary: fc.record({
        op: fc.constant('advance' as const),
        ms: fc.integer({ min: 0, max: Math.ceil(windowMs / 50) }),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({ op: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: windowMs }) }),
    },
  );

/** Runs one step on a limiter; what a caller sees (decisions) is returned for comparison. */
async function play(limiter: Limiter, step: Step): Promise<Decision | undefined> {
  switch (step.op) {
    case 'consume':
      return limiter.consume(step.key, { cost: step.cost });
    case 'peek':
      return limiter.peek(step.key);
    case 'reset':
      await limiter.reset(step.key);
      return undefined;
    case 'refund':
      await limiter.refund(step.key, step.cost);
      return undefined;
    default:
      return undefined;
  }
}

describe.skipIf(target.skip)('Redis store deny cache', () => {
  const redis = proxiedRedisForSuite(target);
  let client: Redis;

  beforeAll(async () => {
    client = new Redis(redis.proxy.port, '127.0.0.1', { maxRetriesPerRequest: 0 });
    await client.ping();
  });
  afterAll(() => client?.disconnect());

  const scriptCalls = async (): Promise<number> => {
    const stats = await redis.admin.info('commandstats');
    let calls = 0;
    for (const match of stats.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+)/g)) calls += Number(match[1]);
    return calls;
  };

  it.each(ALL_ALGORITHMS)('decides a random sequence exactly as the store without it (%s)', async (algorithm) => {
    const cached = createRedisStore({ client, prefix: `cached-${randomUUID()}:` });
    const plain = createRedisStore({ client, prefix: `plain-${randomUUID()}:`, denyCache: false });
    const policySets = fc.array(policyOptions(algorithm), { minLength: 1, maxLength: 2 });
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        policySets.chain((policies) =>
          fc.tuple(
            fc.constant(policies),
            fc.array(stepArbitrary(windowOf(policies)), { minLength: 20, maxLength: 80 }),
          ),
        ),
        async ([policies, steps]) => {
          const clock = manualClock();
          const prefix = `run${run++}`;
          const named = policies.map((policy, i) => ({ ...policy, name: `p${i}` }));
          // A slow call must fail the run, not pass as a fail-open decision on one side only.
          const strict = { onStoreError: 'throw', storeTimeoutMs: 10_000 } as const;
          const withCache = createLimiter({ ...strict, policies: named, store: cached, clock, prefix });
          const without = createLimiter({ ...strict, policies: named, store: plain, clock, prefix });
          for (const step of steps) {
            if (step.op === 'advance') clock.advance(step.ms);
            else expect(await play(withCache, step)).toEqual(await play(without, step));
          }
        },
      ),
      { numRuns: 25 },
    );
  });

  it('answers a refused client from memory: no script call reaches Redis until the wait ends', async () => {
    const clock = manualClock();
    const store = createRedisStore({ client, prefix: `count-${randomUUID()}:` });
    const limiter = createLimiter({ limit: 2, window: '1m', algorithm: 'fixed-window', store, clock });
    await limiter.consume('ip');
    await limiter.consume('ip');
    const refused = await limiter.consume('ip');
    expect(refused).toMatchObject({ allowed: false, retryAfterMs: 60_000 - (clock() % 60_000) });

    const before = await scriptCalls();
    redis.proxy.hold(); // anything sent would wait here: cached answers must not need it
    for (let i = 0; i < 100; i++) {
      clock.advance(1);
      const decision = await limiter.consume('ip');
      expect(decision).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: refused.retryAfterMs - i - 1 });
    }
    expect(redis.proxy.heldBytes).toBe(0);
    redis.proxy.release();
    expect(await scriptCalls()).toBe(before);

    // Another cost, a wait that has ended, or a reset through this store asks Redis again.
    await limiter.consume('ip', { cost: 2 });
    expect(await scriptCalls()).toBe(before + 1);
    clock.advance(refused.retryAfterMs);
    expect((await limiter.consume('ip')).allowed).toBe(true);
    expect(await scriptCalls()).toBe(before + 2);
  });

  // The limiter used to ask the store's promise-returning consume even for a refusal the
  // deny cache knew, so a refused client on Redis cost a promise and a timeout timer more than
  // on the memory store; the HTTP layer decides at once what the store already knows.
  it('a refusal the cache knows is decided without asking the store at all', async () => {
    const clock = manualClock();
    const store = createRedisStore({ client, prefix: `known-${randomUUID()}:` });
    let asked = 0;
    const counted = {
      ...store,
      consume: (request: Parameters<typeof store.consume>[0]) => {
        asked++;
        return store.consume(request);
      },
    };
    const limiter = createLimiter({ limit: 1, window: '1m', algorithm: 'fixed-window', store: counted, clock });
    expect((await limiter.consume('ip')).allowed).toBe(true);
    const refused = await limiter.consume('ip');
    expect(refused.allowed).toBe(false);
    expect(asked).toBe(2);
    clock.advance(1);
    expect(await limiter.consume('ip')).toMatchObject({ allowed: false, retryAfterMs: refused.retryAfterMs - 1 });
    expect(asked).toBe(2);
    // Another client is not known: it is asked of Redis.
    expect((await limiter.consume('another')).allowed).toBe(true);
    expect(asked).toBe(3);
  });

  // The limiter asks the deny cache in one request object it reuses from call to call; a
  // request that goes on to Redis must be its own, or the next call would rewrite it while
  // the first is still waiting to be sent.
  it('each request in flight keeps its own client while the next one is asked', async () => {
    const store = createRedisStore({ client, prefix: `flight-${randomUUID()}:` });
    const limiter = createLimiter({ limit: 2, window: '1m', algorithm: 'fixed-window', store });
    await Promise.all([limiter.consume('a', { cost: 2 }), limiter.consume('b', { cost: 2 })]);
    // Both are refused by Redis, and each refusal is learned once Redis answers: after both were asked.
    const refused = await Promise.all([limiter.consume('a'), limiter.consume('b')]);
    expect(refused.map((d) => [d.key, d.allowed])).toEqual([
      ['a', false],
      ['b', false],
    ]);
    const before = await scriptCalls();
    expect(await limiter.consume('a')).toMatchObject({ key: 'a', allowed: false });
    expect(await limiter.consume('b')).toMatchObject({ key: 'b', allowed: false });
    expect(await scriptCalls()).toBe(before);
  });

  // A refusal decided at once is written into objects the cache reuses; only the limiter,
  // which copies the figures at once, may see them. Nothing handed out may change later.
  it('never changes a decision or a reply it handed out when it answers the next refusal', async () => {
    const clock = manualClock();
    const store = createRedisStore({ client, prefix: `scratch-${randomUUID()}:` });
    const limiter = createLimiter({ limit: 1, window: '1m', algorithm: 'fixed-window', store, clock, prefix: 'p' });
    await limiter.consume('ip');
    await limiter.consume('ip'); // refused by Redis, and learned
    clock.advance(1);
    const first = await limiter.consume('ip');
    const firstCopy = structuredClone(first);
    const request = { namespace: 'p', key: 'ip', policies: limiter.policies, capacities: [1], cost: 1, now: clock() };
    const reply = await store.consume(request);
    const replyCopy = structuredClone(reply);
    clock.advance(1);
    const second = await limiter.consume('ip');
    await store.consume({ ...request, now: clock() });
    expect(second.retryAfterMs).toBe(first.retryAfterMs - 1);
    expect(first).toEqual(firstCopy);
    expect(reply).toEqual(replyCopy);
    expect(reply).toMatchObject({ allowed: false, outcomes: [{ allowed: false, remaining: 0 }] });
  });

  // The cache is keyed by client key, with one refusal per limiter under it: a limiter must
  // never answer with another's refusal, and forgetting one must keep the others.
  it('keeps the refusals of several limiters for one client apart', async () => {
    const clock = manualClock();
    const store = createRedisStore({ client, prefix: `apart-${randomUUID()}:` });
    const strict = { algorithm: 'fixed-window', store, clock, onStoreError: 'throw' } as const;
    const one = createLimiter({ ...strict, limit: 1, window: '1m', prefix: 'one' });
    const two = createLimiter({ ...strict, limit: 2, window: '1m', prefix: 'two' });
    const three = createLimiter({ ...strict, limit: 1, window: '1m', prefix: 'three' });
    expect((await one.consume('ip')).allowed).toBe(true);
    expect((await one.consume('ip')).allowed).toBe(false);
    expect((await two.consume('ip')).allowed).toBe(true); // not `one`'s refusal
    expect((await two.consume('ip')).allowed).toBe(true);
    expect((await two.consume('ip')).allowed).toBe(false);
    expect((await three.consume('ip')).allowed).toBe(true);
    expect((await three.consume('ip')).allowed).toBe(false);

    const before = await scriptCalls();
    for (const limiter of [one, two, three]) expect((await limiter.consume('ip')).allowed).toBe(false);
    expect(await scriptCalls()).toBe(before);

    // A refund through `two` (in the middle of the client's refusals) forgets its refusal only.
    await two.refund('ip', 1);
    expect((await two.consume('ip')).allowed).toBe(true);
    const afterRefund = await scriptCalls();
    for (const limiter of [one, three]) expect((await limiter.consume('ip')).allowed).toBe(false);
    expect(await scriptCalls()).toBe(afterRefund);
    // A reset through `one` (the first learned) forgets its refusal, and `three` keeps its own.
    await one.reset('ip');
    expect((await one.consume('ip')).allowed).toBe(true);
    const afterReset = await scriptCalls();
    expect((await three.consume('ip')).allowed).toBe(false);
    expect(await scriptCalls()).toBe(afterReset);
  });

  // A key one limiter keeps refusing must not carry every other limiter's refusal for ever
  // (per-user tiers, rules reloads): a key holds the latest few, and an older one asks Redis.
  it('holds the latest 8 refusals of one client, and asks Redis for an older one', async () => {
    const PER_KEY = 8; // README, "Deny cache"
    const clock = manualClock();
    const store = createRedisStore({ client, prefix: `bounded-${randomUUID()}:` });
    const limiters = Array.from({ length: 3 * PER_KEY }, (_, i) =>
      createLimiter({ limit: 1, window: '1h', algorithm: 'fixed-window', store, clock, prefix: `tier${i}` }),
    );
    for (const limiter of limiters) {
      await limiter.consume('ip');
      expect((await limiter.consume('ip')).allowed).toBe(false);
    }
    const before = await scriptCalls();
    const latest = limiters.slice(-PER_KEY);
    for (const limiter of latest) expect((await limiter.consume('ip')).allowed).toBe(false);
    expect(await scriptCalls()).toBe(before);
    expect((await limiters[0]?.consume('ip'))?.allowed).toBe(false);
    expect(await scriptCalls()).toBe(before + 1);
  });

  // README, "Deny cache": at most `maxKeys` refused client keys, the least recently refused
  // dropped first. Replaying a refusal is not refusing anew: it keeps a client's place.
  it('keeps maxKeys refused clients, dropping the least recently refused first', async () => {
    const clock = manualClock();
    const store = createRedisStore({ client, prefix: `max-keys-${randomUUID()}:`, denyCache: { maxKeys: 2 } });
    const limiter = createLimiter({ limit: 1, window: '1h', algorithm: 'fixed-window', store, clock });
    const refuse = async (key: string) => expect((await limiter.consume(key)).allowed).toBe(false);
    for (const key of ['a', 'b', 'c']) await limiter.consume(key);
    await refuse('a');
    await refuse('b');
    let before = await scriptCalls();
    await refuse('b');
    await refuse('a'); // replayed last, but 'a' is still the least recently refused
    expect(await scriptCalls()).toBe(before);
    await refuse('c'); // asks Redis, and drops 'a'
    expect(await scriptCalls()).toBe(before + 1);
    before = await scriptCalls();
    await refuse('b');
    await refuse('c');
    expect(await scriptCalls()).toBe(before);
    await refuse('a');
    expect(await scriptCalls()).toBe(before + 1);
  });

  it('sees a reset or refund made through another store object on this client at once (it answered from its refusal)', async () => {
    const clock = manualClock();
    const prefix = `neighbour-${randomUUID()}:`;
    const options = { limit: 1, window: '10s', algorithm: 'gcra', clock, prefix: 'x' } as const;
    const here = createLimiter({ ...options, store: createRedisStore({ client, prefix }) });
    const neighbour = createLimiter({ ...options, store: createRedisStore({ client, prefix, denyCache: false }) });
    await here.consume('k');
    expect((await here.consume('k')).allowed).toBe(false);
    await neighbour.reset('k');
    expect((await here.consume('k')).allowed).toBe(true);
    expect((await here.consume('k')).allowed).toBe(false);
    await neighbour.refund('k', 1);
    expect((await here.consume('k')).allowed).toBe(true);
  });

  // Regression: a refusal read from another version's state (a rolling deploy) gave the new
  // version's own wait, 12 s for gcra at 5 a minute, though Redis, converting the same units
  // on every read, refused until the old state reset an hour on: the cache counted that wait
  // down while Redis answered 12 s again, and the client was sent back some 300 times.
  const pairs = ALL_ALGORITHMS.flatMap((from) => ALL_ALGORITHMS.map((to) => [from, to] as const));
  it.each(pairs)('replays a refusal read from another version %s → %s exactly as Redis gives it', async (from, to) => {
    const clock = manualClock();
    const cached = createRedisStore({ client, prefix: `versions-cached-${randomUUID()}:` });
    const plain = createRedisStore({ client, prefix: `versions-plain-${randomUUID()}:`, denyCache: false });
    const strict = { onStoreError: 'throw', storeTimeoutMs: 10_000, clock, prefix: 'v' } as const;
    const version = (store: typeof plain, algorithm: AlgorithmName, window: '1h' | '1m') =>
      createLimiter({ ...strict, store, policies: [{ name: 'p', limit: 5, window, algorithm }] });
    const [oldCached, oldPlain] = [version(cached, from, '1h'), version(plain, from, '1h')];
    const [newCached, newPlain] = [version(cached, to, '1m'), version(plain, to, '1m')];
    let spent: Decision | undefined;
    for (let i = 0; i < 5; i++) {
      await oldCached.consume('k');
      spent = await oldPlain.consume('k');
    }
    const resetAt = clock() + (spent as Decision).resetAfterMs;
    for (const step of [1, 11_000, 1_000, 60_000, 600_000]) {
      clock.advance(step);
      const decision = await newPlain.consume('k');
      expect(decision).toMatchObject({ allowed: false, retryAfterMs: resetAt - clock() });
      expect(await newCached.consume('k')).toEqual(decision);
    }
    clock.set(resetAt);
    expect((await newCached.consume('k')).allowed).toBe(true);
  });

  it('misses a reset made through another process until the cached wait ends, and no longer', async () => {
    const clock = manualClock();
    const prefix = `other-${randomUUID()}:`;
    const here = createLimiter({
      limit: 1,
      window: '10s',
      algorithm: 'gcra',
      store: createRedisStore({ client, prefix }),
      clock,
      prefix: 'x',
    });
    const other = new Redis(redis.proxy.port, '127.0.0.1', { maxRetriesPerRequest: 0 });
    try {
      const elsewhere = createLimiter({
        limit: 1,
        window: '10s',
        algorithm: 'gcra',
        store: createRedisStore({ client: other, prefix }),
        clock,
        prefix: 'x',
      });
      await here.consume('k');
      const refused = await here.consume('k');
      expect(refused.allowed).toBe(false);
      await elsewhere.reset('k');
      expect((await here.consume('k')).allowed).toBe(false); // the documented miss
      await here.reset('k'); // a reset through this store forgets at once
      expect((await here.consume('k')).allowed).toBe(true);
      const again = await here.consume('k');
      await elsewhere.refund('k', 1);
      clock.advance(again.retryAfterMs - 1);
      expect((await here.consume('k')).allowed).toBe(false); // still within the miss's bound
      clock.advance(1);
      expect((await here.consume('k')).allowed).toBe(true);
    } finally {
      other.disconnect();
    }
  });

  it('refuses bad options at construction', () => {
    expect(() => createRedisStore({ client, denyCache: { maxKeys: 0 } })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_OPTION' }),
    );
    expect(() => createRedisStore({ client, denyCache: { maxKeys: 1.5 } })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_OPTION' }),
    );
    expect(() => createRedisStore({ client, denyCache: true as never })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_OPTION' }),
    );
    expect(() => createRedisStore({ client, denyCache: { size: 5 } as never })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_UNKNOWN_OPTION' }),
    );
  });
});

function windowOf(policies: readonly PolicyOptions[]): number {
  return Math.max(...policies.map((policy) => (typeof policy.window === 'number' ? policy.window : 60_000)));
}
