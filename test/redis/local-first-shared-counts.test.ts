import { randomUUID } from 'node:crypto';
import { createLimiter, type Logger } from '@sluice/core';
import { createRedisStore, type RedisStore } from '@sluice/redis';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../helpers/clock.js';
import { admitted } from '../helpers/local-first.js';
import { connectRedis, deleteKeys, standaloneRedis } from '../helpers/redis-env.js';

const target = await standaloneRedis();
const quiet: Logger = { warn() {} };

// Each limiter used to keep its own count of a client and write it to the one field of its
// process and policy version: two limiters given the same prefix (sharing a count on purpose)
// each admitted the whole limit, and a rules reload's new limiter wrote 0 over the old one's
// total, admitting every client afresh.
describe.skipIf(target.skip)('Redis store, local-first mode: limiters that share a prefix share a count', () => {
  const prefix = `sluice-lf-shared:${randomUUID()}:`;
  let client: Redis;
  let store: RedisStore;

  beforeAll(async () => {
    client = await connectRedis(target.require());
    store = createRedisStore({ client, prefix, logger: quiet, localFirst: { syncIntervalMs: 60_000 } });
  });
  afterAll(async () => {
    await store?.localFirst?.close().catch(() => {});
    if (client === undefined) return;
    await deleteKeys(client, prefix);
    client.disconnect();
  });

  it.each(['fixed-window', 'sliding-window-counter'] as const)(
    '%s: two limiters with one prefix and the same policies admit the limit once, in Redis too',
    async (algorithm) => {
      const clock = manualClock(1_700_000_040_000);
      const options = { limit: 10, window: '1m', algorithm, store, clock, prefix: `both-${algorithm}` } as const;
      const [a, b] = [createLimiter(options), createLimiter(options)];
      let passed = 0;
      for (let round = 0; round < 5; round++) {
        passed += (await admitted(a, 'u', 4)) + (await admitted(b, 'u', 4));
        await store.localFirst?.sync();
      }
      expect(passed).toBe(10);
      const key = `${prefix}lf:{both-${algorithm}|u}:_0@60000:${Math.floor(clock() / 60_000)}`;
      expect(Object.values(await client.hgetall(key)).map(Number)).toEqual([10]);
    },
  );

  it('a reloaded limiter with the same policies keeps every client count', async () => {
    const clock = manualClock(1_700_000_040_000);
    const options = { limit: 10, window: '1m', algorithm: 'fixed-window', store, clock, prefix: 'reload' } as const;
    expect(await admitted(createLimiter(options), 'u', 10)).toBe(10);
    await store.localFirst?.sync();
    const reloaded = createLimiter(options);
    expect(await reloaded.consume('u')).toMatchObject({ allowed: false, remaining: 0 });
    await store.localFirst?.sync();
    const key = `${prefix}lf:{reload|u}:_0@60000:${Math.floor(clock() / 60_000)}`;
    expect(Object.values(await client.hgetall(key)).map(Number)).toEqual([10]);
  });

  it('a reset through a limiter that has not decided yet clears the count another limiter kept (it did nothing)', async () => {
    const clock = manualClock(1_700_000_040_000);
    const options = { limit: 10, window: '1m', algorithm: 'fixed-window', store, clock, prefix: 'reset' } as const;
    const first = createLimiter(options);
    expect(await admitted(first, 'u', 10)).toBe(10);
    await createLimiter(options).reset('u');
    expect(await admitted(first, 'u', 10)).toBe(10);
  });

  it('a reload that changes one of two policies keeps the other policy count', async () => {
    const clock = manualClock(1_700_000_040_000);
    const policies = (burst: number) =>
      [
        { name: 'burst', limit: burst, window: '1m', algorithm: 'fixed-window' },
        { name: 'minute', limit: 10, window: '1m', algorithm: 'fixed-window' },
      ] as const;
    const old = createLimiter({ policies: policies(100), store, clock, prefix: 'partial' });
    expect(await admitted(old, 'u', 6)).toBe(6);
    await store.localFirst?.sync();
    const reloaded = createLimiter({ policies: policies(50), store, clock, prefix: 'partial' });
    expect(await admitted(reloaded, 'u', 10)).toBe(4);
    await store.localFirst?.sync();
    // Each set's total in a field of its own: the old one's 6 is not written over.
    const key = `${prefix}lf:{partial|u}:minute@60000:${Math.floor(clock() / 60_000)}`;
    expect(
      Object.values(await client.hgetall(key))
        .map(Number)
        .sort(),
    ).toEqual([4, 6]);
  });
});
