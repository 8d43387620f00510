import { createLimiter } from '@sluice/core';
import { createRedisStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { manualClock } from '../helpers/clock.js';
import { admitted } from '../helpers/local-first.js';
import { redisTarget } from '../helpers/redis-env.js';
import { hasRedisServer } from '../helpers/redis-server.js';
import { privateRedis } from './private-redis.js';

const target = redisTarget('redis-server', hasRedisServer() || undefined, 'redis-server is not installed');
const WINDOW_MS = 60_000;
const START = 1_700_000_040_000 - (1_700_000_040_000 % WINDOW_MS);
const windowKey = (prefix: string, key: string) => `${prefix}lf:{d|${key}}:_0@${WINDOW_MS}:${START / WINDOW_MS}`;

// A count the sync script could not add (text, or a key of another type) failed the whole call:
// every client of the slot (of the whole store, off a cluster) was held to `outageShare` for as
// long as the damaged key lived, and nothing was reconciled. A negative count lowered the sum,
// so the client was admitted past its limit (20 of 10).
describe.skipIf(target.skip)('Redis store, local-first mode: window keys damaged outside sluice', () => {
  let damaged = 0;
  const redis = privateRedis();

  async function appProcess(prefix: string) {
    const client = new Redis(redis.server.port, '127.0.0.1', { maxRetriesPerRequest: 0 });
    const warnings: string[] = [];
    const store = createRedisStore({
      client,
      prefix,
      logger: { warn: (message) => warnings.push(message) },
      localFirst: { syncIntervalMs: 60_000, outageShare: 0.5 },
    });
    const limiter = createLimiter({
      limit: 10,
      window: '1m',
      algorithm: 'fixed-window',
      store,
      clock: manualClock(START),
      prefix: 'd',
    });
    return {
      limiter,
      store,
      warnings,
      async close() {
        await store.localFirst?.close();
        client.disconnect();
      },
    };
  }

  it.each([
    ['a count that is not a number', (key: string) => redis.admin.hset(key, 'someone', 'abc')],
    ['a count that is not a whole number', (key: string) => redis.admin.hset(key, 'someone', '2.5')],
    ['a key of another type', (key: string) => redis.admin.set(key, 'x')],
  ])('%s counts as nothing, and the other clients go on at full share', async (_, damage) => {
    const prefix = `damaged-${damaged++}:`;
    const app = await appProcess(prefix);
    try {
      await damage(windowKey(prefix, 'hit'));
      expect(await admitted(app.limiter, 'hit', 3)).toBe(3);
      expect(await admitted(app.limiter, 'other', 4)).toBe(4);
      await app.store.localFirst?.sync();
      expect(app.warnings).toEqual([]);
      // At full share, on the counts this process wrote.
      expect(await admitted(app.limiter, 'other', 10)).toBe(6);
      expect(await admitted(app.limiter, 'hit', 10)).toBe(7);
      await app.store.localFirst?.sync();
      // This process's total beside the damage, which stays (a key of another type is replaced).
      expect(await redis.admin.hvals(windowKey(prefix, 'hit'))).toContain('10');
    } finally {
      await app.close();
    }
  });

  it('a negative count admits no one past the limit', async () => {
    const prefix = 'damaged-negative:';
    const app = await appProcess(prefix);
    try {
      await redis.admin.hset(windowKey(prefix, 'hit'), 'someone', '-1000');
      expect(await admitted(app.limiter, 'hit', 5)).toBe(5);
      await app.store.localFirst?.sync();
      expect(await admitted(app.limiter, 'hit', 20)).toBe(5);
    } finally {
      await app.close();
    }
  });
  // Only a key of another type is replaced: Redis out of memory refuses the write, and the
  // counts other processes wrote stay.
  it('a write refused for memory fails the sync and keeps the key', async () => {
    const prefix = 'damaged-oom:';
    const app = await appProcess(prefix);
    try {
      await redis.admin.hset(windowKey(prefix, 'hit'), 'other-process', '4');
      await redis.admin.config('SET', 'maxmemory', '1');
      await app.limiter.consume('hit');
      await expect(app.store.localFirst?.sync()).rejects.toMatchObject({ code: 'ERR_SLUICE_STORE_UNAVAILABLE' });
      expect(await redis.admin.hgetall(windowKey(prefix, 'hit'))).toEqual({ 'other-process': '4' });
    } finally {
      await redis.admin.config('SET', 'maxmemory', '0');
      await app.close().catch(() => {});
    }
  });
});
