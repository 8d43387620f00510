import { createLimiter, type Limiter } from '@sluice/core';
import { createRedisStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { redisTarget, waitReady } from '../helpers/redis-env.js';
import { proxiedRedisForSuite } from '../helpers/redis-proxy.js';
import { hasRedisServer } from '../helpers/redis-server.js';

const target = redisTarget('redis-server', hasRedisServer() || undefined, 'redis-server is not installed');

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * A private Redis, so that its command counts are this suite's alone, behind a proxy that can
 * hold a call on its way, so that it stays in flight for as long as a test needs.
 */
describe.skipIf(target.skip)('Redis store batching while a call is in flight', () => {
  const redis = proxiedRedisForSuite(target);
  let client: Redis;
  let limiter: Limiter;

  beforeEach(async () => {
    client = new Redis(redis.proxy.port, '127.0.0.1', { maxRetriesPerRequest: 0 });
    client.on('error', () => {});
    await waitReady(client, 5_000);
    limiter = createLimiter({
      limit: 100,
      window: '1m',
      store: createRedisStore({ client }),
      storeTimeoutMs: 10_000,
      onStoreError: 'throw',
    });
    // The script is loaded by the first call; count from here on.
    await limiter.consume('warm-up');
    await redis.admin.config('RESETSTAT');
  });

  afterEach(() => {
    redis.proxy.release();
    client.disconnect();
  });

  const scriptCalls = async () => {
    const stats = (await redis.admin.info('commandstats')) as string;
    // EVAL the first time a call of that many keys runs on the connection, EVALSHA after.
    const calls = (name: string) => Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
    return calls('eval') + calls('evalsha');
  };

  /** The proxy runs in this process: what the client wrote reaches it a few turns later. */
  const untilHeld = async () => {
    for (let turn = 0; turn < 1000 && redis.proxy.heldBytes === 0; turn++) await new Promise((r) => setTimeout(r, 0));
    return redis.proxy.heldBytes;
  };

  it('gathers the decisions of later turns while a call is in flight, and counts each of them', async () => {
    redis.proxy.hold();
    const first = limiter.consume('first');
    const later: Promise<unknown>[] = [];
    for (let turn = 0; turn < 3; turn++) {
      await nextTurn();
      later.push(limiter.consume(`later-${turn}`), limiter.consume(`later-${turn}`));
    }
    await untilHeld();
    redis.proxy.release();
    await Promise.all([first, ...later]);
    // A batch per turn would make 4 calls. Gathered, the six leave in one call after the first;
    // a turn held up past MAX_WAIT_MS on a busy machine may split them once.
    expect(await scriptCalls()).toBeLessThanOrEqual(3);
    const counted = await limiter.peek('later-1');
    expect(counted.remaining).toBe(98);
  });
});
