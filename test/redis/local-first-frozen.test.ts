import { createLimiter } from '@sluice/core';
import { createRedisStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { manualClock } from '../helpers/clock.js';
import { redisTarget } from '../helpers/redis-env.js';
import { hasRedisServer, waitFor } from '../helpers/redis-server.js';
import { watchUnhandledRejections } from './fault-harness.js';
import { privateRedis } from './private-redis.js';

const target = redisTarget('redis-server', hasRedisServer() || undefined, 'redis-server is not installed');
const WINDOW_MS = 60_000;
const START = 1_700_000_040_000 - (1_700_000_040_000 % WINDOW_MS);
/** A sync call's bound at a 50 ms interval (4 × T, at least 200 ms). */
const SYNC_TIMEOUT_MS = 200;
const TURNS = 100;
const NEW_PER_TURN = 5;

/** Script calls the server has run so far (its own server: nothing else counts). */
async function scriptCalls(client: Redis): Promise<number> {
  const stats = await client.info('commandstats');
  const calls = (name: string) => Number(stats.match(new RegExp(`cmdstat_${name}:calls=(\\d+)`))?.[1] ?? 0);
  return calls('evalsha') + calls('eval');
}

// A frozen Redis (SIGSTOP, a stalled VM) keeps its connections open. After the store had found
// it out of reach, every new client's first request still waited out the whole timeout (200 ms),
// and every turn of the event loop sent the frozen Redis one more read: 2,529 calls queued in
// 3 s of new clients, all run at once when it woke.
describe.skipIf(target.skip)('Redis store, local-first mode: a frozen Redis', () => {
  const redis = privateRedis();

  it('decides new clients at once while their slot is out of reach, and sends it nothing more', async () => {
    const rejections = watchUnhandledRejections();
    const client = new Redis(redis.server.port, '127.0.0.1', { maxRetriesPerRequest: 0 });
    client.on('error', () => {});
    const warnings: string[] = [];
    const store = createRedisStore({
      client,
      prefix: 'frozen:',
      logger: { warn: (message) => warnings.push(message) },
      localFirst: { syncIntervalMs: 50, outageShare: 0.5 },
    });
    const clock = manualClock(START);
    const limiter = createLimiter({ limit: 10, window: '1m', algorithm: 'fixed-window', store, clock, prefix: 'f' });
    const pid = Number((await redis.admin.info('server')).match(/process_id:(\d+)/)?.[1]);
    await limiter.consume('known');
    const before = await scriptCalls(redis.admin);
    process.kill(pid, 'SIGSTOP');
    let latencies: number[] = [];
    try {
      await limiter.consume('known');
      await expect(store.localFirst?.sync()).rejects.toThrow();
      const decisions: Promise<unknown>[] = [];
      for (let turn = 0; turn < TURNS; turn++) {
        for (let i = 0; i < NEW_PER_TURN; i++) {
          const started = performance.now();
          decisions.push(limiter.consume(`new-${turn}-${i}`).then(() => latencies.push(performance.now() - started)));
        }
        await new Promise((resolve) => setImmediate(resolve));
      }
      await Promise.all(decisions);
      // Decided as in an outage, at its share.
      let passed = 0;
      for (let i = 0; i < 10; i++) if ((await limiter.consume('new-0-0')).allowed) passed++;
      expect(passed).toBe(4);
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    try {
      latencies = latencies.sort((a, b) => a - b);
      expect(latencies[latencies.length - 1]).toBeLessThan(SYNC_TIMEOUT_MS / 2);
      await client.ping();
      // The syncs that found it frozen, not a read per turn.
      expect((await scriptCalls(redis.admin)) - before).toBeLessThanOrEqual(5);
      // Back: the clients decided meanwhile are written at a sync.
      await waitFor('the store to sync again', async () => warnings.some((w) => w.includes('LOCAL_FIRST_ONLINE')));
      const key = `frozen:lf:{f|new-0-0}:_0@${WINDOW_MS}:${START / WINDOW_MS}`;
      expect(Object.values(await redis.admin.hgetall(key))).toEqual(['5']);
    } finally {
      await store.localFirst?.close().catch(() => {});
      client.disconnect();
      rejections.stop();
    }
    expect(rejections.seen).toEqual([]);
  });

  // A reset waited for the sync under way, then up to a bound for its calls to drain, then up
  // to another for its own deletion: three bounds in a row (2,949 ms where a sync's is 1 s).
  it('ends a reset within one sync bound while a sync waits on the frozen Redis', async () => {
    const client = new Redis(redis.server.port, '127.0.0.1', { maxRetriesPerRequest: 0 });
    client.on('error', () => {});
    // A 250 ms interval: a sync's bound is 4 × 250 ms.
    const bound = 1000;
    const store = createRedisStore({
      client,
      prefix: 'frozen-reset:',
      logger: { warn() {} },
      localFirst: { syncIntervalMs: 250 },
    });
    const clock = manualClock(START);
    const limiter = createLimiter({
      limit: 10,
      window: '1m',
      algorithm: 'fixed-window',
      store,
      clock,
      prefix: 'r',
      onStoreError: 'throw',
    });
    const pid = Number((await redis.admin.info('server')).match(/process_id:(\d+)/)?.[1]);
    await limiter.consume('known');
    process.kill(pid, 'SIGSTOP');
    let tookMs = 0;
    try {
      await limiter.consume('known');
      const syncing = store.localFirst?.sync().catch(() => {});
      const started = performance.now();
      await expect(limiter.reset('known')).rejects.toMatchObject({ code: 'ERR_SLUICE_STORE_UNAVAILABLE' });
      tookMs = performance.now() - started;
      await syncing;
    } finally {
      process.kill(pid, 'SIGCONT');
      await store.localFirst?.close().catch(() => {});
      client.disconnect();
    }
    expect(tookMs).toBeGreaterThanOrEqual(bound - 50);
    expect(tookMs).toBeLessThan(1.5 * bound);
  });
});
