import { createLimiter } from '@sluice/core';
import { createRedisStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../helpers/clock.js';
import { redisTarget } from '../helpers/redis-env.js';
import { hasRedisServer, type RedisServer, startRedisServer } from '../helpers/redis-server.js';

const target = redisTarget('redis-server', hasRedisServer() || undefined, 'redis-server is not installed');

/** Script calls the server has run so far (its own server: nothing else counts). */
async function scriptCalls(client: Redis): Promise<number> {
  const stats = await client.info('commandstats');
  const calls = (name: string) => Number(stats.match(new RegExp(`cmdstat_${name}:calls=(\\d+)`))?.[1] ?? 0);
  return calls('evalsha') + calls('eval');
}

describe.skipIf(target.skip)('Redis store, local-first mode: many clients at once', () => {
  let server: RedisServer;
  let client: Redis;
  const warnings: string[] = [];

  beforeAll(async () => {
    server = await startRedisServer();
    client = new Redis(server.port, '127.0.0.1', { maxRetriesPerRequest: 0 });
    await client.ping();
  });
  afterAll(async () => {
    client?.disconnect();
    await server?.stop();
  });

  // Each first request was read in a script call of its own: 2,000 new clients cost 2,001
  // calls, and 10,000 at once queued long enough to time out and be decided as in an outage.
  it('reads the first requests of many new clients in a few calls, not one each', async () => {
    const store = createRedisStore({
      client,
      prefix: 'first:',
      logger: { warn: (message) => warnings.push(message) },
      localFirst: { syncIntervalMs: 60_000, outageShare: 0.5 },
    });
    const limiter = createLimiter({ limit: 10, window: '1m', algorithm: 'fixed-window', store, prefix: 'f' });
    const before = await scriptCalls(client);
    const decisions = await Promise.all(Array.from({ length: 10_000 }, (_, i) => limiter.consume(`c${i}`)));
    // 10,000 keys, 512 to a call.
    expect((await scriptCalls(client)) - before).toBeLessThanOrEqual(20);
    // Decided on the fleet's counts at full share, none as in an outage.
    expect(decisions.every((decision) => decision.remaining === 9)).toBe(true);
    expect(warnings).toEqual([]);
    await store.localFirst?.close();
  });

  // The whole sync had one timeout: past a few hundred calls every sync failed, the store
  // stayed offline, and the next sync started while the last one's calls were still queued.
  it('syncs more clients than one timeout allows, each call bounded on its own', async () => {
    const clock = manualClock(1_700_000_040_000);
    const store = createRedisStore({
      client,
      prefix: 'large:',
      logger: { warn: (message) => warnings.push(message) },
      localFirst: { syncIntervalMs: 50, outageShare: 0.5 },
    });
    const limiter = createLimiter({ limit: 10, window: '1m', algorithm: 'fixed-window', store, clock, prefix: 'l' });
    const clients = 60_000;
    await Promise.all(Array.from({ length: clients }, (_, i) => limiter.consume(`c${i}`)));
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < clients; i++) limiter.consume(`c${i}`);
      await store.localFirst?.sync();
    }
    expect(warnings).toEqual([]);
    const key = `large:lf:{l|c${clients - 1}}:_0@60000:${Math.floor(clock() / 60_000)}`;
    expect(Object.values(await client.hgetall(key)).map(Number)).toEqual([3]);
    await store.localFirst?.close();
  }, 30_000);
});
