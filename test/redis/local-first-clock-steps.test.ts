import { createLimiter } from '@sluice/core';
import { createRedisStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../helpers/clock.js';
import { admitted } from '../helpers/local-first.js';
import { redisTarget } from '../helpers/redis-env.js';
import { hasRedisServer, type RedisServer, startRedisServer } from '../helpers/redis-server.js';

const target = redisTarget('redis-server', hasRedisServer() || undefined, 'redis-server is not installed');
const WINDOW_MS = 60_000;
const DAY_MS = 86_400_000;

// The store judged which windows were over by the latest time any decision had used, and kept
// that time after the clock stepped back. One decision a day ahead (a host clock stepped forward
// and corrected, a limiter with a wrong injected clock) made every later window look over for a
// day: each sync wrote nothing and forgot every client, whose next request was read afresh, so
// a client got its whole limit again after each sync (50 of a limit of 10 in five syncs).
describe.skipIf(target.skip)('Redis store, local-first mode: a clock stepped forward and back', () => {
  let server: RedisServer;
  let client: Redis;

  beforeAll(async () => {
    server = await startRedisServer();
    client = new Redis(server.port, '127.0.0.1', { maxRetriesPerRequest: 0 });
    await client.ping();
  });
  afterAll(async () => {
    client?.disconnect();
    await server?.stop();
  });

  it.each(['fixed-window', 'sliding-window-counter'] as const)(
    '%s: keeps the limit and writes the counts once the clock is back',
    async (algorithm) => {
      const clock = manualClock(1_700_000_040_000 - (1_700_000_040_000 % WINDOW_MS));
      const prefix = `steps-${algorithm}:`;
      const store = createRedisStore({ client, prefix, logger: { warn() {} }, localFirst: { syncIntervalMs: 60_000 } });
      const limiter = createLimiter({ limit: 10, window: '1m', algorithm, store, clock, prefix: 's' });
      try {
        const back = clock();
        clock.advance(DAY_MS);
        await limiter.consume('ahead');
        clock.set(back);
        let passed = 0;
        for (let round = 0; round < 5; round++) {
          passed += await admitted(limiter, 'k', 10);
          await store.localFirst?.sync();
        }
        expect(passed).toBe(10);
        const key = `${prefix}lf:{s|k}:_0@${WINDOW_MS}:${Math.floor(back / WINDOW_MS)}`;
        expect(Object.values(await client.hgetall(key)).map(Number)).toEqual([10]);
      } finally {
        await store.localFirst?.close();
      }
    },
  );
});
