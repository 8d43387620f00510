import { createLimiter, type Decision } from '@sluice/core';
import { createRedisStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { redisTarget, waitReady } from '../helpers/redis-env.js';
import { proxiedRedisForSuite } from '../helpers/redis-proxy.js';
import { hasRedisServer, waitFor } from '../helpers/redis-server.js';
import { LATENCY_MARGIN_MS, NOW, STORE_TIMEOUT_MS, startLoad, watchUnhandledRejections } from './fault-harness.js';

const target = redisTarget('redis-server', hasRedisServer() || undefined, 'redis-server is not installed');

describe.skipIf(target.skip)('a connection lost while Redis has run calls it could not answer', () => {
  const redis = proxiedRedisForSuite(target);

  it('runs no decision twice with the client setting the README recommends', async () => {
    const rejections = watchUnhandledRejections();
    const client = new Redis(redis.proxy.port, '127.0.0.1', {
      enableAutoPipelining: true,
      maxRetriesPerRequest: 0,
    });
    client.on('error', () => {});
    await waitReady(client, 5_000);
    // Every call gets its own millisecond, so each logs its own entry: a call run twice would
    // show its time twice.
    let sequence = 0;
    const limiter = createLimiter({
      limit: 1_000_000,
      window: '1h',
      algorithm: 'sliding-window-log',
      store: createRedisStore({ client, prefix: 'lost:' }),
      prefix: 'lost',
      clock: () => NOW + sequence++,
      storeTimeoutMs: STORE_TIMEOUT_MS,
      logger: { warn: () => {} },
    });
    const load = startLoad(limiter);
    try {
      await load.until('decisions before the fault', () => load.decidedByRedis() >= 200);
      redis.proxy.loseReplies();
      await load.until('calls Redis ran but could not answer', () => load.failed() >= 30);
      const before = load.decidedByRedis();
      redis.proxy.forward();
      await load.until('recovery', () => load.decidedByRedis() >= before + 200);
    } finally {
      await load.stop();
      rejections.stop();
    }
    await waitFor('the last calls to land', async () => client.status === 'ready');
    const entries = (await redis.admin.lrange('lost:{lost|hot}:_0', 0, -1)).map(Number);
    const times = entries.filter((_, i) => i % 2 === 0);
    const costs = entries.filter((_, i) => i % 2 === 1);
    expect(new Set(times).size).toBe(times.length);
    expect(costs.every((c) => c === 1)).toBe(true);
    // Redis holds every answered charge, plus the ones whose answers were lost, each once.
    const answered = load.outcomes.filter((o) => o.decision?.reason === undefined).length;
    expect(times.length).toBeGreaterThan(answered);
    expect(Math.max(...load.outcomes.map((o) => o.latencyMs))).toBeLessThanOrEqual(
      STORE_TIMEOUT_MS + LATENCY_MARGIN_MS,
    );
    expect(load.outcomes.every((o) => (o.decision as Decision).allowed)).toBe(true);
    expect(rejections.seen).toEqual([]);
    await redis.admin.del('lost:{lost|hot}:_0');
    client.disconnect();
  }, 30_000);
});
