import { createLimiter } from '@sluice/core';
import { enableMetrics, METRICS } from '@sluice/otel';
import { createRedisStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { manualClock } from '../helpers/clock.js';
import { redisTarget } from '../helpers/redis-env.js';
import { hasRedisServer, waitFor } from '../helpers/redis-server.js';
import { privateRedis } from '../redis/private-redis.js';
import { sdkMetrics, seriesOf } from './sdk.js';

const target = redisTarget('redis-server', hasRedisServer() || undefined, 'redis-server is not installed');
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const byStore = (value: number) => [[{ 'sluice.store': 'edge' }, value]];

// A local-first store decides in-process and never fails a decision, so an outage showed in no
// metric at all: only its log lines told that every process was limiting alone.
describe.skipIf(target.skip)('enableMetrics with a local-first Redis store', () => {
  const redis = privateRedis();

  it('reports its clients, the hash slots it cannot reach and the calls Redis did not answer', async () => {
    const client = new Redis(redis.server.port, '127.0.0.1', { maxRetriesPerRequest: 0 });
    client.on('error', () => {});
    const store = createRedisStore({
      client,
      prefix: 'metrics:',
      logger: { warn: () => {} },
      localFirst: { syncIntervalMs: 50 },
    });
    cleanups.push(
      () => client.disconnect(),
      () => store.localFirst?.close(),
    );
    const sdk = sdkMetrics();
    const disable = enableMetrics({ meterProvider: sdk.meterProvider, localFirstStores: { edge: store } });
    cleanups.push(sdk.shutdown, disable);
    const limiter = createLimiter({ limit: 10, window: '1m', store, clock: manualClock(60_000), prefix: 'm' });
    for (const key of ['a', 'b', 'c']) await limiter.consume(key);

    let collected = await sdk.collect();
    expect(seriesOf(collected, METRICS.localFirstClients)).toEqual(byStore(3));
    expect(seriesOf(collected, METRICS.localFirstSlotsDown)).toEqual(byStore(0));
    expect(seriesOf(collected, METRICS.localFirstFailedCalls)).toEqual(byStore(0));

    // A frozen Redis keeps its connections open: each sync's call times out (200 ms at this interval).
    const pid = Number((await redis.admin.info('server')).match(/process_id:(\d+)/)?.[1]);
    process.kill(pid, 'SIGSTOP');
    try {
      await limiter.consume('a');
      await expect(store.localFirst?.sync()).rejects.toMatchObject({ code: 'ERR_SLUICE_STORE_UNAVAILABLE' });
      collected = await sdk.collect();
      expect(seriesOf(collected, METRICS.localFirstSlotsDown)).toEqual(byStore(1));
      const [[, failed]] = seriesOf(collected, METRICS.localFirstFailedCalls) as [[unknown, number]];
      expect(failed).toBeGreaterThanOrEqual(1);
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    await limiter.consume('b');
    await waitFor('a sync to reach Redis again', async () => store.localFirst?.status().slotsDown === 0);
    collected = await sdk.collect();
    expect(seriesOf(collected, METRICS.localFirstSlotsDown)).toEqual(byStore(0));
    expect(seriesOf(collected, METRICS.localFirstClients)).toEqual(byStore(3));
  });

  it('refuses a Redis store in exact mode, which has no counts of its own to report', () => {
    const client = new Redis(redis.server.port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0 });
    const store = createRedisStore({ client });
    expect(() => enableMetrics({ localFirstStores: { edge: store } })).toThrow(
      expect.objectContaining({
        code: 'ERR_SLUICE_INVALID_OPTION',
        message: expect.stringMatching(
          /`localFirstStores\.edge` of enableMetrics must be a store from createRedisStore\(\{ localFirst \}\)/,
        ),
      }),
    );
    client.disconnect();
  });
});
