import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { createLimiter } from '@sluice/core';
import { createMemoryStore } from '@sluice/memory';
import { enableMetrics, METRICS } from '@sluice/otel';
import { afterEach, describe, expect, it } from 'vitest';
import { failingStore, promiseStore } from '../helpers/stores.js';
import { sdkMetrics, seriesOf } from './sdk.js';

setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

const KEYS = 10_000;
let cleanup: (() => Promise<unknown>) | undefined;
afterEach(() => cleanup?.());

describe('series per instrument', () => {
  it(`stays fixed for ${KEYS.toLocaleString('en')} distinct client keys: no key becomes an attribute`, async () => {
    const sdk = sdkMetrics();
    const disable = enableMetrics({ meterProvider: sdk.meterProvider });
    cleanup = async () => {
      disable();
      await sdk.shutdown();
    };
    const login = createLimiter({ name: 'login', limit: 1, window: '1h', prefix: 'login', store: createMemoryStore() });
    const api = createLimiter({
      policies: [
        { name: 'second', limit: 5, window: '1s' },
        { name: 'hour', limit: 2, window: '1h' },
      ],
      prefix: 'api',
      store: createMemoryStore(),
    });
    const fragile = createLimiter({
      limit: 5,
      window: '1m',
      prefix: 'fragile',
      store: failingStore(new Error('down')),
      logger: { warn() {} },
    });
    const keys = Array.from({ length: KEYS }, (_, i) => `user-${i}@example.com|203.0.113.${i % 256}`);
    for (const key of keys) {
      await login.consume(key);
      await login.consume(key);
      await api.consume(key);
      await fragile.consume(key);
    }

    const metrics = await sdk.collect();
    const series = Object.fromEntries(metrics.map((m) => [m.descriptor.name, m.dataPoints.length]));
    expect(series).toEqual({
      // login allowed and limited; api allowed (reported under its `hour` policy); fragile store_error
      'sluice.decisions': 4,
      'sluice.near_limit': 3, // one per policy seen
      'sluice.store.duration': 1,
      'sluice.store.errors': 1,
      'sluice.store.fail_open': 1,
      'sluice.queue.held': 3,
    });
    const decisions = metrics.find((m) => m.descriptor.name === 'sluice.decisions')?.dataPoints ?? [];
    expect(decisions.reduce((sum, p) => sum + (p.value as number), 0)).toBe(4 * KEYS);
    const values = metrics.flatMap((m) => m.dataPoints.flatMap((p) => Object.values(p.attributes).map(String)));
    expect(values.filter((v) => v.includes('@example.com') || v.includes('203.0.113.'))).toEqual([]);
  });

  // Every limiter name ever seen kept its counts, though limiter names can come from data (each
  // `policies(req)` tier is a limiter): 100,000 tiers held 190 MB, and the SDK reported 2,000.
  it('counts the limiters past 2,000 together under otel.metric.overflow, as the SDK does', async () => {
    const sdk = sdkMetrics(100_000);
    const disable = enableMetrics({ meterProvider: sdk.meterProvider });
    cleanup = async () => {
      disable();
      await sdk.shutdown();
    };
    const store = createMemoryStore();
    for (let tier = 0; tier < 2500; tier++) {
      const limiter = createLimiter({ limit: tier + 1, window: '1m', prefix: `tier.${tier}`, store, clock: () => 0 });
      await limiter.consume('k');
    }
    const remote = createLimiter({ limit: 5, window: '1m', prefix: 'tier.remote', store: promiseStore() });
    await remote.consume('k');
    const metrics = await sdk.collect();
    const decisions = seriesOf(metrics, METRICS.decisions);
    expect(decisions).toHaveLength(2001);
    expect(decisions.reduce((sum, [, n]) => sum + (n as number), 0)).toBe(2501);
    expect(decisions.at(-1)).toEqual([{ 'otel.metric.overflow': true, 'sluice.result': 'allowed' }, 501]);
    // Limit 1: the one hit leaves none, near the limit; the others leave more than 20 %.
    expect(seriesOf(metrics, METRICS.nearLimit).at(-1)).toEqual([{ 'otel.metric.overflow': true }, 0]);
    expect(seriesOf(metrics, METRICS.nearLimit)[0]).toEqual([
      { 'sluice.limiter': 'tier.0', 'sluice.policy': '1-per-1m' },
      1,
    ]);
    const durations = metrics.find((m) => m.descriptor.name === METRICS.storeDuration)?.dataPoints ?? [];
    expect(durations.map((p) => p.attributes)).toEqual([{ 'otel.metric.overflow': true, 'sluice.store': 'remote' }]);
  });

  it('keeps the heap where it was for 12,000 more limiters past the bound', async () => {
    const sdk = sdkMetrics();
    const disable = enableMetrics({ meterProvider: sdk.meterProvider });
    cleanup = async () => {
      disable();
      await sdk.shutdown();
    };
    const store = createMemoryStore({ maxKeys: 100 });
    const run = async (from: number, to: number) => {
      for (let tier = from; tier < to; tier++) {
        await createLimiter({ limit: 5, window: '1m', prefix: `tier.${tier}`, store, clock: () => 0 }).consume('k');
      }
      await sdk.collect();
    };
    await run(0, 3000);
    collectGarbage();
    const warm = process.memoryUsage().heapUsed;
    await run(3000, 15_000);
    collectGarbage();
    // At the 1.9 kB a limiter kept before, this was 23 MB.
    expect(process.memoryUsage().heapUsed - warm).toBeLessThan(4 * 1024 * 1024);
  }, 60_000);
});
