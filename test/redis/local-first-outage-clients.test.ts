import { createLimiter } from '@sluice/core';
import { createRedisStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { manualClock } from '../helpers/clock.js';
import { redisTarget } from '../helpers/redis-env.js';
import { hasRedisServer, type RedisServer, startRedisServer, waitFor } from '../helpers/redis-server.js';
import { watchUnhandledRejections } from './fault-harness.js';

const target = redisTarget('redis-server', hasRedisServer() || undefined, 'redis-server is not installed');
const WINDOW_MS = 60_000;
const NEW_CLIENTS = 200;

// New clients met while Redis is down: at the default outage share each waited for a first read
// that could only fail, counted in `failedCalls` (201 for 200 clients), and every sync built the
// calls of every client Redis had not got (30,000 of them kept the event loop busy). Now none is
// read, and each sync sends one client to find out whether Redis is back, then, once it is,
// every other client, once.
describe.skipIf(target.skip)('Redis store, local-first mode: clients met while Redis is down', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await startRedisServer();
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('are decided at once, unread, and written once when Redis is back', async () => {
    const rejections = watchUnhandledRejections();
    const client = new Redis(server.port, '127.0.0.1', { maxRetriesPerRequest: 0, retryStrategy: () => 20 });
    client.on('error', () => {});
    const warnings: string[] = [];
    // An interval no timer reaches in this test: each sync is the test's own.
    const store = createRedisStore({
      client,
      prefix: 'down-clients:',
      logger: { warn: (message) => warnings.push(message) },
      localFirst: { syncIntervalMs: 60_000 },
    });
    const clock = manualClock(1_700_000_040_000 - (1_700_000_040_000 % WINDOW_MS));
    const limiter = createLimiter({
      limit: 5,
      window: WINDOW_MS,
      algorithm: 'fixed-window',
      store,
      clock,
      prefix: 'd',
    });
    const window = Math.floor(clock() / WINDOW_MS);
    const status = () => store.localFirst?.status();
    try {
      expect((await limiter.consume('known')).allowed).toBe(true);
      await store.localFirst?.sync();
      await server.kill();
      await limiter.consume('known');
      await expect(store.localFirst?.sync()).rejects.toMatchObject({ code: 'ERR_SLUICE_STORE_UNAVAILABLE' });
      expect(status()).toMatchObject({ slotsDown: 1, failedCalls: 1 });

      const decided = await Promise.all(Array.from({ length: NEW_CLIENTS }, (_, i) => limiter.consume(`new-${i}`)));
      expect(decided.every((d) => d.allowed && d.remaining === 4)).toBe(true);
      expect(status()).toMatchObject({ clients: NEW_CLIENTS + 1, failedCalls: 1 });
      await expect(store.localFirst?.sync()).rejects.toMatchObject({ code: 'ERR_SLUICE_STORE_UNAVAILABLE' });
      expect(status()).toMatchObject({ slotsDown: 1, failedCalls: 2 });

      await server.start();
      // One sync finds Redis back through one client, then writes the others.
      await store.localFirst?.sync();
      expect(status()).toMatchObject({ slotsDown: 0 });
      const counted = await Promise.all(
        Array.from({ length: NEW_CLIENTS }, (_, i) =>
          client.hgetall(`down-clients:lf:{d|new-${i}}:_0@${WINDOW_MS}:${window}`),
        ),
      );
      expect(counted.map((fields) => Object.values(fields).map(Number))).toEqual(counted.map(() => [1]));
      expect(warnings.filter((w) => w.includes('WRN_SLUICE_LOCAL_FIRST')).map((w) => w.match(/WRN_\w+/)?.[0])).toEqual([
        'WRN_SLUICE_LOCAL_FIRST_OFFLINE',
        'WRN_SLUICE_LOCAL_FIRST_ONLINE',
      ]);
      expect(rejections.seen).toEqual([]);
    } finally {
      rejections.stop();
      await store.localFirst?.close().catch(() => {});
      client.disconnect();
    }
  });

  // Every interval's sync walked every client met since Redis went away, to send none of them.
  it("rest the timer's syncs for a call timeout after one that reached no Redis", async () => {
    const own = await startRedisServer();
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'performance'] });
    const client = new Redis(own.port, '127.0.0.1', { maxRetriesPerRequest: 0, retryStrategy: () => 20 });
    client.on('error', () => {});
    // At 10 ms a call's timeout is 200 ms.
    const store = createRedisStore({
      client,
      prefix: 'rest:',
      logger: { warn: () => {} },
      localFirst: { syncIntervalMs: 10 },
    });
    const limiter = createLimiter({ limit: 5, window: WINDOW_MS, algorithm: 'fixed-window', store, prefix: 'r' });
    const failedCalls = () => store.localFirst?.status().failedCalls;
    try {
      await limiter.consume('known');
      await own.kill();
      await waitFor('the client to see Redis gone', async () => client.status !== 'ready');
      await limiter.consume('known');
      await vi.advanceTimersByTimeAsync(10);
      expect(failedCalls()).toBe(1);
      await vi.advanceTimersByTimeAsync(180);
      expect(failedCalls()).toBe(1);
      await vi.advanceTimersByTimeAsync(30);
      expect(failedCalls()).toBe(2);
    } finally {
      vi.useRealTimers();
      await store.localFirst?.close().catch(() => {});
      client.disconnect();
      await own.stop();
    }
  });
});
