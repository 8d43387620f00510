import { randomUUID } from 'node:crypto';
import { createHttpLimiter, createLimiter, type Logger, storeKey, toPolicy } from '@sluice/core';
import { createRedisStore, type RedisStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { fakeBinding } from '../adapters/unit/fake-binding.js';
import { manualClock } from '../helpers/clock.js';
import { admitted, localFirstFleetForSuite } from '../helpers/local-first.js';
import { standaloneRedis } from '../helpers/redis-env.js';
import { proxiedRedisForSuite } from '../helpers/redis-proxy.js';

const target = await standaloneRedis();
const quiet: Logger = { warn() {} };

/** Syncs as soon as the client has reconnected (bounded: 2 s). */
async function syncWhenBack(store: RedisStore): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await store.localFirst?.sync();
    } catch (error) {
      if (attempt === 100) throw error;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}

describe.skipIf(target.skip)('Redis store, local-first mode, on a standalone Redis', () => {
  const prefix = `sluice-lf:${randomUUID()}:`;
  const fleet = localFirstFleetForSuite(target, prefix);
  const { appProcess } = fleet;

  it.each(['fixed-window', 'sliding-window-counter'] as const)(
    '%s: decides locally, and each sync adds every process count to the others (exactly once)',
    async (algorithm) => {
      const clock = manualClock(1_700_000_000_000 - (1_700_000_000_000 % 60_000));
      const [a, b] = [await appProcess(), await appProcess()];
      const options = { limit: 10, window: '1m', algorithm, clock, prefix: `both-${algorithm}` } as const;
      const onA = createLimiter({ ...options, store: a });
      const onB = createLimiter({ ...options, store: b });

      expect(await admitted(onA, 'k', 6)).toBe(6);
      // B has not heard of A's 6 yet: between syncs the fleet can exceed the limit (the bound).
      expect(await admitted(onB, 'k', 6)).toBe(6);
      await a.localFirst?.sync();
      await b.localFirst?.sync();
      await a.localFirst?.sync(); // again: a total written twice counts once
      const windowKey = `${prefix}lf:{both-${algorithm}|k}:_0@${onA.policies[0]?.windowMs}:${Math.floor(clock() / 60_000)}`;
      const perProcess = Object.values(await fleet.admin.hgetall(windowKey)).map(Number);
      expect(perProcess.sort()).toEqual([6, 6]);
      // Both now see 12 of 10 and refuse, with the figures the algorithm gives for that count.
      const refusedA = await onA.consume('k');
      expect(refusedA).toMatchObject({ allowed: false, remaining: 0 });
      expect((await onB.consume('k')).allowed).toBe(false);

      clock.advance(algorithm === 'fixed-window' ? 60_000 : 120_000);
      expect(await admitted(onA, 'k', 10)).toBe(10);
      expect((await onA.consume('k')).allowed).toBe(false);
    },
  );

  it('a request one policy refuses reports the others as they stand, as every other store does', async () => {
    const clock = manualClock(1_700_000_040_000);
    const policies = [
      { name: 'burst', limit: 2, window: '1m', algorithm: 'fixed-window' },
      { name: 'minute', limit: 10, window: '1m', algorithm: 'fixed-window' },
    ] as const;
    const local = createLimiter({ policies, clock, prefix: 'partial', store: await appProcess() });
    const reference = createLimiter({ policies, clock, prefix: 'partial' });
    for (let i = 0; i < 3; i++) {
      const [got, expected] = [await local.consume('k'), await reference.consume('k')];
      expect(got.policies).toEqual(expected.policies);
    }
    // The refused third request charged nothing: `minute` still has 8, not 7.
    expect((await local.peek('k')).policies.map((p) => p.remaining)).toEqual([0, 8]);
  });

  it('waits for one read of the fleet before a client first request in this process', async () => {
    const clock = manualClock(1_700_000_040_000);
    const [a, b] = [await appProcess(), await appProcess()];
    const options = { limit: 5, window: '1m', algorithm: 'fixed-window', clock, prefix: 'first' } as const;
    const onA = createLimiter({ ...options, store: a });
    expect(await admitted(onA, 'k', 5)).toBe(5);
    await a.localFirst?.sync();
    // B starts late: its first request reads A's 5 and is refused without any sync of its own.
    const onB = createLimiter({ ...options, store: b });
    expect(await onB.consume('k')).toMatchObject({ allowed: false, remaining: 0 });
  });

  // Local-first used to answer even a known client through the store's promise, so every
  // request cost the HTTP layer a promise chain the memory store does not: it now decides at once.
  // An idle client used to be read again for the windows of its last request: the fleet's
  // count of the window its next request falls in went unread, and that window admitted twice.
  it.each(['fixed-window', 'sliding-window-counter'] as const)(
    '%s: reads an idle client again for the windows its next request falls in',
    async (algorithm) => {
      const clock = manualClock(1_700_000_040_000 - (1_700_000_040_000 % 60_000));
      const [a, b] = [await appProcess(), await appProcess()];
      const options = { limit: 10, window: '1m', algorithm, clock, prefix: `idle-${algorithm}` } as const;
      const onA = createLimiter({ ...options, store: a });
      const onB = createLimiter({ ...options, store: b });
      expect(await admitted(onA, 'k', 1)).toBe(1);
      await a.localFirst?.sync(); // writes A's count
      await a.localFirst?.sync(); // A idle through a whole sync: read again before it decides
      clock.advance(60_000);
      // B fills the next window (the counter weighs A's one of the window before).
      expect(await admitted(onB, 'k', 10)).toBe(algorithm === 'fixed-window' ? 10 : 9);
      await b.localFirst?.sync();
      expect(await admitted(onA, 'k', 10)).toBe(0);
    },
  );

  // Window keys used to name the policy's whole version: a changed limit or algorithm (a
  // rules reload, a rolling deploy) counted in keys of its own and gave every client a fresh quota.
  it('a changed limit or algorithm reads the count the old version left (SPEC §4)', async () => {
    const clock = manualClock(1_700_000_040_000 - (1_700_000_040_000 % 60_000));
    const [a, b, c] = [await appProcess(), await appProcess(), await appProcess()];
    const options = { window: '1m', clock, prefix: 'changed' } as const;
    const old = createLimiter({ ...options, limit: 5, algorithm: 'fixed-window', store: a });
    const larger = createLimiter({ ...options, limit: 6, algorithm: 'fixed-window', store: b });
    const counter = createLimiter({ ...options, limit: 7, algorithm: 'sliding-window-counter', store: c });
    expect(await admitted(old, 'k', 5)).toBe(5);
    await a.localFirst?.sync();
    // No more than the larger limit allows while both run.
    expect(await admitted(larger, 'k', 6)).toBe(1);
    await b.localFirst?.sync();
    expect(await admitted(counter, 'k', 7)).toBe(1);
    await c.localFirst?.sync();
    await a.localFirst?.sync();
    expect(await admitted(old, 'k', 1)).toBe(0);
    const windowKey = `${prefix}lf:{changed|k}:_0@60000:${Math.floor(clock() / 60_000)}`;
    expect(
      Object.values(await fleet.admin.hgetall(windowKey))
        .map(Number)
        .sort(),
    ).toEqual([1, 1, 5]);
  });

  it('decides a known client at once, with no promise, through the HTTP layer', async () => {
    const clock = manualClock(1_700_000_040_000);
    const store = await appProcess();
    const options = { limit: 2, window: '1m', algorithm: 'fixed-window', clock, prefix: 'at-once', store } as const;
    const limiter = createHttpLimiter(options, fakeBinding());
    const request = () => ({ ip: '203.0.113.7', headers: {} });
    const first = limiter.handle(request(), {});
    expect(first).toBeInstanceOf(Promise); // a new client waits for one read of the fleet
    expect((await first).action).toBe('next');
    const second = limiter.handle(request(), {});
    expect(second).not.toBeInstanceOf(Promise);
    expect(second).toMatchObject({ action: 'next', decision: { remaining: 0 } });
    expect(limiter.handle(request(), {})).toMatchObject({ action: 'limited', decision: { allowed: false } });
  });

  // Decided at once, a client key comes as the caller gave it, and the store makes it safe
  // itself, skipping that for a key it holds as it is: a key it must hash is still decided at
  // once, and a key that spells another key's made-safe form is another client.
  it('decides keys it must make safe at once, each apart, and as the memory store does', async () => {
    const clock = manualClock(1_700_000_040_000);
    const store = await appProcess();
    let atOnce = 0;
    const consumed: string[] = [];
    const counted: RedisStore = {
      ...store,
      decideAtOnce(request) {
        const reply = store.decideAtOnce?.(request);
        if (reply !== undefined) atOnce++;
        return reply;
      },
      consume(request) {
        consumed.push(request.key);
        return store.consume(request);
      },
    };
    const longKey = 'k'.repeat(200);
    const keys = ['c{d}', longKey, storeKey(longKey), 'plain'];
    const options = { limit: 2, window: '1m', algorithm: 'sliding-window-counter', clock, prefix: 'given' } as const;
    const limiter = createLimiter({ ...options, store: counted });
    const reference = createLimiter(options);
    for (const round of [1, 2, 3]) {
      for (const key of keys) {
        const [got, expected] = [await limiter.consume(key), await reference.consume(key)];
        expect(got, `${key.slice(0, 12)}, round ${round}`).toEqual(expected);
      }
    }
    // The first round waited for each client's read of the fleet, asked with the key made
    // safe; every later one was at once.
    expect(consumed).toEqual(keys.map(storeKey));
    expect(atOnce).toBe(2 * keys.length);
  });

  // Counts are kept by policies, then namespace, then client key: a request for one policies
  // array under another namespace is another client, and a reset forgets one of them only.
  it('keeps one client apart per namespace, even for one policies array', async () => {
    const store = await appProcess();
    const policies = [toPolicy({ limit: 2, window: '1m', algorithm: 'fixed-window' }, 'p')];
    const ask = (namespace: string) =>
      store.consume({ namespace, key: 'k', policies, capacities: [2], cost: 1, now: 1_700_000_040_000 });
    expect((await ask('ns-a')).outcomes[0]?.remaining).toBe(1);
    expect((await ask('ns-a')).outcomes[0]?.remaining).toBe(0);
    expect((await ask('ns-b')).outcomes[0]?.remaining).toBe(1);
    await store.reset('ns-b', 'k', policies);
    expect((await ask('ns-b')).outcomes[0]?.remaining).toBe(1);
    expect((await ask('ns-a')).allowed).toBe(false);
  });

  it('refund and reset through a process reach the shared count', async () => {
    const clock = manualClock(1_700_000_040_000);
    const [a, b] = [await appProcess(), await appProcess()];
    const options = { limit: 3, window: '1m', algorithm: 'fixed-window', clock, prefix: 'undo' } as const;
    const onA = createLimiter({ ...options, store: a });
    const onB = createLimiter({ ...options, store: b });
    expect(await admitted(onA, 'k', 3)).toBe(3);
    await onA.refund('k', 2);
    await a.localFirst?.sync();
    expect(await admitted(onB, 'k', 3)).toBe(2);
    await b.localFirst?.sync();
    await onB.reset('k');
    expect(await admitted(onB, 'k', 4)).toBe(3);
  });

  // The counter's previous window still weighs a charge made just before the boundary: a
  // refund just past it, dated by the charge, gives that back, here and, through the next sync,
  // to the fleet.
  it('sliding-window-counter: a refund just past a window boundary gives back a charge dated just before it', async () => {
    const windowStart = 1_700_000_040_000 - (1_700_000_040_000 % 60_000);
    const clock = manualClock(windowStart + 59_999);
    const [a, b] = [await appProcess(), await appProcess()];
    const options = {
      limit: 3,
      window: '1m',
      algorithm: 'sliding-window-counter',
      clock,
      prefix: 'late-refund',
    } as const;
    const onA = createLimiter({ ...options, store: a });
    const onB = createLimiter({ ...options, store: b });
    expect(await admitted(onA, 'k', 3)).toBe(3);
    clock.set(windowStart + 60_000);
    await onA.refund('k', 2, { chargedAt: windowStart + 59_999 });
    expect((await onA.peek('k')).remaining).toBe(2);
    await a.localFirst?.sync();
    expect(await admitted(onB, 'k', 3)).toBe(2);
  });

  it('refuses at construction what it cannot do well', async () => {
    const store = await appProcess();
    for (const algorithm of ['token-bucket', 'leaky-bucket', 'gcra', 'sliding-window-log'] as const) {
      expect(() => createLimiter({ limit: 5, window: '1s', algorithm, store, prefix: `no-${algorithm}` })).toThrow(
        expect.objectContaining({ code: 'ERR_SLUICE_INVALID_POLICIES' }),
      );
    }
    const client = fleet.admin;
    for (const localFirst of [
      {},
      { syncIntervalMs: 1 },
      { syncIntervalMs: 2.5 },
      { syncIntervalMs: 50, outageShare: 0 },
      null,
    ]) {
      expect(() => createRedisStore({ client, localFirst: localFirst as never })).toThrow(
        expect.objectContaining({ code: 'ERR_SLUICE_INVALID_OPTION' }),
      );
    }
    expect(() => createRedisStore({ client, localFirst: { syncIntervalMs: 50, sync: 1 } as never })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_UNKNOWN_OPTION' }),
    );
  });
});

describe.skipIf(target.skip)('Redis store, local-first mode, through an outage', () => {
  const redis = proxiedRedisForSuite(target);

  it('limits locally at its share while Redis is away, and reconciles without double counting', async () => {
    const clock = manualClock(1_700_000_040_000);
    const warnings: string[] = [];
    const client = new Redis(redis.proxy.port, '127.0.0.1', { maxRetriesPerRequest: 0, retryStrategy: () => 20 });
    client.on('error', () => {});
    const store = createRedisStore({
      client,
      prefix: 'outage:',
      logger: { warn: (message) => warnings.push(message) },
      localFirst: { syncIntervalMs: 60_000, outageShare: 0.25 },
    });
    try {
      const limiter = createLimiter({ limit: 40, window: '1m', algorithm: 'fixed-window', store, clock, prefix: 'o' });
      expect(await admitted(limiter, 'k', 4)).toBe(4);
      await store.localFirst?.sync();

      // Redis runs the sync but its reply is lost: the process cannot know it was counted.
      redis.proxy.loseReplies();
      expect(await admitted(limiter, 'k', 2)).toBe(2);
      await expect(store.localFirst?.sync()).rejects.toThrow();
      expect(warnings.join('\n')).toMatch(/WRN_SLUICE_LOCAL_FIRST_OFFLINE/);
      // Away from Redis: a quarter of 40 is 10, of which 6 are spent.
      expect(await admitted(limiter, 'k', 10)).toBe(4);

      await redis.server.kill();
      await expect(store.localFirst?.sync()).rejects.toThrow();
      await redis.server.start();
      redis.proxy.forward();
      await syncWhenBack(store);
      // Redis lost the counts in the crash (no persistence): the next sync writes them again,
      // once, and the full limit is back.
      expect(warnings.join('\n')).toMatch(/WRN_SLUICE_LOCAL_FIRST_ONLINE/);
      const windowKey = `lf:{o|k}:_0@${limiter.policies[0]?.windowMs}:${Math.floor(clock() / 60_000)}`;
      expect(Object.values(await redis.admin.hgetall(`outage:${windowKey}`))).toEqual(['10']);
      expect(await admitted(limiter, 'k', 40)).toBe(30);
    } finally {
      await store.localFirst?.close().catch(() => {});
      client.disconnect();
    }
  });

  it('decides a new client on local counts when its first read gets no reply, instead of failing the request', async () => {
    const clock = manualClock(1_700_000_040_000);
    const client = new Redis(redis.proxy.port, '127.0.0.1', { maxRetriesPerRequest: 0, retryStrategy: () => 20 });
    client.on('error', () => {});
    await client.ping();
    const store = createRedisStore({
      client,
      prefix: 'silent:',
      logger: quiet,
      localFirst: { syncIntervalMs: 60_000, outageShare: 0.25 },
    });
    try {
      const limiter = createLimiter({
        ...{ limit: 40, window: '1m', algorithm: 'fixed-window', store, clock, prefix: 's' },
        // Shorter than the read's own bound (200 ms): the limiter must not cut it short.
        ...{ storeTimeoutMs: 20, onStoreError: 'deny' },
      });
      redis.proxy.loseReplies();
      const first = await limiter.consume('k');
      expect(first).toMatchObject({ allowed: true, remaining: 9 });
      // Decided alone, at a quarter of 40.
      expect(await admitted(limiter, 'k', 20)).toBe(9);
    } finally {
      redis.proxy.forward();
      await store.localFirst?.close().catch(() => {});
      client.disconnect();
    }
  });

  // The wait for a first connection used to lie outside the read's bound: a Redis that took
  // the connection and never answered held a new client's first request until it gave up.
  it('bounds a first request while the client opens its first connection to a Redis that never answers', async () => {
    redis.proxy.silence();
    const client = new Redis(redis.proxy.port, '127.0.0.1', { maxRetriesPerRequest: 0, connectTimeout: 60_000 });
    client.on('error', () => {});
    const store = createRedisStore({
      client,
      prefix: 'opening:',
      logger: quiet,
      localFirst: { syncIntervalMs: 60_000, outageShare: 0.25 },
    });
    try {
      const clock = manualClock(1_700_000_040_000);
      const limiter = createLimiter({ limit: 40, window: '1m', algorithm: 'fixed-window', store, clock, prefix: 'f' });
      // The read gives up after its bound (1 s at this interval), well within the test's 5 s.
      expect(await limiter.consume('k')).toMatchObject({ allowed: true, remaining: 9 });
      expect(client.status).toBe('connect');
    } finally {
      redis.proxy.forward();
      client.disconnect();
    }
  }, 5000);

  it('bounds a reset on a Redis that stops answering, under every fail policy', async () => {
    const client = new Redis(redis.proxy.port, '127.0.0.1', { maxRetriesPerRequest: 0 });
    client.on('error', () => {});
    await client.ping();
    const store = createRedisStore({ client, prefix: 'reset:', logger: quiet, localFirst: { syncIntervalMs: 60_000 } });
    try {
      const clock = manualClock(1_700_000_040_000);
      const options = { limit: 40, window: '1m', algorithm: 'fixed-window', store, clock, logger: quiet } as const;
      const allowing = createLimiter({ ...options, prefix: 'a', onStoreError: 'allow' });
      const throwing = createLimiter({ ...options, prefix: 't', onStoreError: 'throw' });
      expect(await admitted(allowing, 'k', 1)).toBe(1);
      expect(await admitted(throwing, 'k', 1)).toBe(1);
      redis.proxy.silence();
      await allowing.reset('k');
      await expect(throwing.reset('k')).rejects.toMatchObject({ code: 'ERR_SLUICE_STORE_UNAVAILABLE' });
    } finally {
      redis.proxy.forward();
      await store.localFirst?.close().catch(() => {});
      client.disconnect();
    }
  }, 5000);

  // A reset that had already been reported failed still sent its DEL once a late first
  // connection opened, wiping what other processes had written since.
  it('sends nothing for a reset already reported failed, when the connection opens late', async () => {
    redis.proxy.hold();
    const client = new Redis(redis.proxy.port, '127.0.0.1', { maxRetriesPerRequest: 0 });
    client.on('error', () => {});
    const store = createRedisStore({ client, prefix: 'late:', logger: quiet, localFirst: { syncIntervalMs: 60_000 } });
    let keys: string[] = [];
    try {
      const options = { limit: 40, window: '1m', algorithm: 'fixed-window', store, logger: quiet } as const;
      const limiter = createLimiter({ ...options, prefix: 'p', onStoreError: 'throw' });
      await expect(limiter.reset('k')).rejects.toMatchObject({ code: 'ERR_SLUICE_STORE_UNAVAILABLE' });
      // Another process writes its count meanwhile (around the reset's window, whichever it was).
      const window = Math.floor(Date.now() / 60_000);
      keys = [window - 1, window, window + 1].map((w) => `late:lf:{p|k}:_0@60000:${w}`);
      for (const key of keys) await redis.admin.hset(key, 'other', '4');
      const ready = new Promise((resolve) => client.once('ready', resolve));
      redis.proxy.release();
      await ready;
      await client.ping();
      await client.ping();
      for (const key of keys) expect(await redis.admin.hget(key, 'other')).toBe('4');
    } finally {
      redis.proxy.forward();
      await store.localFirst?.close().catch(() => {});
      client.disconnect();
      await redis.admin.del(
        ...[0, 1, 2].map((d) => `late:lf:{p|k}:_0@60000:${Math.floor(Date.now() / 60_000) - 1 + d}`),
      );
    }
  }, 5000);

  it('counts a lost reply once when Redis stays up', async () => {
    const clock = manualClock(1_700_000_040_000);
    const client = new Redis(redis.proxy.port, '127.0.0.1', { maxRetriesPerRequest: 0, retryStrategy: () => 20 });
    client.on('error', () => {});
    const store = createRedisStore({ client, prefix: 'lost:', logger: quiet, localFirst: { syncIntervalMs: 60_000 } });
    try {
      const limiter = createLimiter({ limit: 40, window: '1m', algorithm: 'fixed-window', store, clock, prefix: 'l' });
      expect(await admitted(limiter, 'k', 3)).toBe(3);
      redis.proxy.loseReplies();
      await expect(store.localFirst?.sync()).rejects.toThrow();
      redis.proxy.forward();
      await syncWhenBack(store);
      const windowKey = `lost:lf:{l|k}:_0@${limiter.policies[0]?.windowMs}:${Math.floor(clock() / 60_000)}`;
      expect(Object.values(await redis.admin.hgetall(windowKey))).toEqual(['3']);
    } finally {
      await store.localFirst?.close().catch(() => {});
      client.disconnect();
    }
  });
});
