import { createLimiter, isSluiceError } from '@sluice/core';
import { createRedisStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { connectRedis, deleteKeys, redisTarget, standaloneRedis } from '../helpers/redis-env.js';
import { hasRedisServer } from '../helpers/redis-server.js';
import { watchUnhandledRejections } from './fault-harness.js';
import { privateRedis } from './private-redis.js';

const standalone = await standaloneRedis();
const target = redisTarget('redis-server', hasRedisServer() || undefined, 'redis-server is not installed');
/** A sync call's bound at this interval (4 × T, at least 200 ms). */
const SYNC_TIMEOUT_MS = 200;
const MARGIN_MS = 300;

const codeOf = (error: unknown) => (isSluiceError(error) ? error.code : String(error));

// The README promises that `close()` rejects with ERR_SLUICE_STORE_UNAVAILABLE when Redis
// cannot take the last sync; a sync that timed out rejected with a bare Error of no code, and
// one Redis refused with its own ReplyError.
describe.skipIf(target.skip)('Redis store, local-first mode: close() when Redis cannot take the last sync', () => {
  const redis = privateRedis();

  async function appProcess(prefix: string) {
    const client = new Redis(redis.server.port, '127.0.0.1', { maxRetriesPerRequest: 0, retryStrategy: () => 20 });
    client.on('error', () => {});
    const store = createRedisStore({ client, prefix, logger: { warn() {} }, localFirst: { syncIntervalMs: 20 } });
    const limiter = createLimiter({ limit: 10, window: '1m', algorithm: 'fixed-window', store, prefix: 'c' });
    await limiter.consume('k');
    return { client, store, limiter };
  }

  it('rejects with ERR_SLUICE_STORE_UNAVAILABLE, within its bound, on a Redis frozen during a sync', async () => {
    const rejections = watchUnhandledRejections();
    const { client, store, limiter } = await appProcess('frozen:');
    const pid = Number((await redis.admin.info('server')).match(/process_id:(\d+)/)?.[1]);
    process.kill(pid, 'SIGSTOP');
    try {
      await limiter.consume('k');
      // A timer sync is on its way to the frozen Redis when close() is asked.
      await new Promise((resolve) => setTimeout(resolve, 30));
      const started = performance.now();
      const closed = await store.localFirst?.close().then(
        () => 'resolved',
        (error: unknown) => error,
      );
      expect(performance.now() - started).toBeLessThan(2 * SYNC_TIMEOUT_MS + MARGIN_MS);
      expect(codeOf(closed)).toBe('ERR_SLUICE_STORE_UNAVAILABLE');
      expect((closed as Error).cause).toBeDefined();
    } finally {
      process.kill(pid, 'SIGCONT');
      rejections.stop();
      client.disconnect();
    }
    expect(rejections.seen).toEqual([]);
  });

  it('rejects with ERR_SLUICE_STORE_UNAVAILABLE when Redis refuses the sync', async () => {
    const { client, store, limiter } = await appProcess('refused:');
    try {
      await redis.admin.config('SET', 'maxmemory', '1');
      await limiter.consume('k');
      const closed = await store.localFirst?.close().then(
        () => 'resolved',
        (error: unknown) => error,
      );
      expect(codeOf(closed)).toBe('ERR_SLUICE_STORE_UNAVAILABLE');
    } finally {
      await redis.admin.config('SET', 'maxmemory', '0');
      client.disconnect();
    }
  });
});

describe.skipIf(standalone.skip)('Redis store, local-first mode: after close()', () => {
  it('logs no outage for a decision that reads a new client (it warned WRN_SLUICE_LOCAL_FIRST_OFFLINE)', async () => {
    const warnings: string[] = [];
    const client = await connectRedis(standalone.require());
    const prefix = `closed-${Date.now()}:`;
    const logger = { warn: (message: string) => warnings.push(message) };
    const store = createRedisStore({ client, prefix, logger, localFirst: { syncIntervalMs: 60_000 } });
    const limiter = createLimiter({ limit: 10, window: '1m', store, prefix: 'c', logger: { warn() {} } });
    await limiter.consume('known');
    await store.localFirst?.close();
    await deleteKeys(client, prefix);
    client.disconnect();
    await limiter.consume('new');
    expect(warnings).toEqual([]);
  });
});
