import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { createLimiter, hold, type RateLimitStore } from '@sluice/core';
import { createMemoryStore } from '@sluice/memory';
import { enableMetrics, METRICS } from '@sluice/otel';
import { afterEach, describe, expect, it } from 'vitest';
import { failingStore, promiseStore } from '../helpers/stores.js';
import { pointsOf, sdkMetrics, seriesOf } from './sdk.js';

setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

const KEYS = 10_000;
const quiet = { warn() {} };
let cleanup: (() => Promise<unknown>) | undefined;
afterEach(() => cleanup?.());

/** An SDK with sluice's metrics on it, both ended after the test. */
function enabledSdk() {
  const sdk = sdkMetrics();
  const disable = enableMetrics({ meterProvider: sdk.meterProvider });
  cleanup = async () => {
    disable();
    await sdk.shutdown();
  };
  return sdk;
}

describe('series per instrument', () => {
  it(`stays fixed for ${KEYS.toLocaleString('en')} distinct client keys: no key becomes an attribute`, async () => {
    const sdk = enabledSdk();
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
  // Bounded at 2,000 limiters, a limiter's several series (a result of each policy) still
  // reached the SDK's cap at 1,000 limiters, past which the SDK counted every new series
  // together with no `sluice.result`.
  it('counts 1,000 series apart and the rest under its own otel.metric.overflow, before the SDK caps', async () => {
    const sdk = enabledSdk(); // the SDK's default cap: 2,000 series per instrument
    const store = createMemoryStore();
    // Three counts a tier: the limiter, its allowed and its limited decisions.
    for (let tier = 0; tier < 1500; tier++) {
      const limiter = createLimiter({ limit: 1, window: '1m', prefix: `tier.${tier}`, store, clock: () => 0 });
      await limiter.consume('k');
      await limiter.consume('k');
    }
    // A counted limiter fails: its store's error type takes the last count, and its first
    // store_error decision, a series not counted yet, goes to the overflow.
    const failing = failingStore(new Error('down'));
    await createLimiter({ limit: 1, window: '1m', prefix: 'tier.0', store: failing, logger: quiet }).consume('k');
    await createLimiter({ limit: 5, window: '1m', prefix: 'tier.remote', store: promiseStore() }).consume('k');

    const metrics = await sdk.collect();
    const decisions = seriesOf(metrics, METRICS.decisions);
    // The SDK's overflow series would have no `sluice.result`.
    expect(decisions.filter(([attributes]) => !('sluice.result' in (attributes as object)))).toEqual([]);
    const apart = [METRICS.decisions, METRICS.queueHeld, METRICS.storeErrors].flatMap((name) =>
      seriesOf(metrics, name).filter(([attributes]) => 'sluice.limiter' in (attributes as object)),
    );
    expect(apart).toHaveLength(1000);
    expect(decisions.filter(([attributes]) => 'otel.metric.overflow' in (attributes as object))).toEqual([
      [{ 'otel.metric.overflow': true, 'sluice.result': 'allowed' }, 1167 + 1],
      [{ 'otel.metric.overflow': true, 'sluice.result': 'limited' }, 1167],
      [{ 'otel.metric.overflow': true, 'sluice.result': 'store_error' }, 1],
    ]);
    expect(decisions.reduce((sum, [, n]) => sum + (n as number), 0)).toBe(3002);
    expect(seriesOf(metrics, METRICS.storeErrors)).toEqual([
      [{ 'sluice.limiter': 'tier.0', 'sluice.store': 'down', 'error.type': 'Error' }, 1],
    ]);
    // Limit 1: the one allowed decision leaves none, near the limit.
    const nearLimit = seriesOf(metrics, METRICS.nearLimit);
    expect(nearLimit[0]).toEqual([{ 'sluice.limiter': 'tier.0', 'sluice.policy': '1-per-1m' }, 1]);
    expect(nearLimit.at(-1)).toEqual([{ 'otel.metric.overflow': true }, 1167]);
    expect(nearLimit).toHaveLength(333 + 1);
    const durations = pointsOf(metrics, METRICS.storeDuration);
    expect(durations.map((p) => p.attributes)).toEqual([
      { 'otel.metric.overflow': true, 'sluice.store': 'down', 'error.type': '_OTHER' },
      { 'otel.metric.overflow': true, 'sluice.store': 'remote' },
    ]);
  });

  // A limiter's one count became two series of `sluice.queue.duration` (completed or not): at
  // 1,000 limiters the instrument passed the SDK's 1,999 series, and the SDK folded the rest
  // into a series with no `sluice.queue.completed`.
  it('counts each way a queue hold ends as a series of its own, so queue durations stay under the SDK cap', async () => {
    const sdk = enabledSdk();
    const response = () => Object.assign(new EventEmitter(), { destroyed: false, writableEnded: false });
    const holds: Promise<boolean>[] = [];
    for (let i = 0; i < 1200; i++) {
      holds.push(hold(response() as unknown as ServerResponse, 1, `queue.${i}`));
      const left = response();
      holds.push(hold(left as unknown as ServerResponse, 60_000, `queue.${i}`));
      left.emit('close');
    }
    expect((await Promise.all(holds)).filter(Boolean)).toHaveLength(1200);
    const metrics = await sdk.collect();
    const durations = pointsOf(metrics, METRICS.queueDuration);
    expect(durations.filter((p) => !('sluice.queue.completed' in p.attributes))).toEqual([]);
    const apart = [METRICS.queueHeld, METRICS.queueDuration].flatMap((name) =>
      seriesOf(metrics, name).filter(([attributes]) => 'sluice.limiter' in (attributes as object)),
    );
    // The clients leave first: the first 500 limiters take a count for their depth and one for
    // the holds left; every completed hold, ending later, is past the bound.
    expect(apart).toHaveLength(1000);
    const past = durations.filter((p) => p.attributes['otel.metric.overflow'] === true);
    expect(past.map((p) => [p.attributes['sluice.queue.completed'], (p.value as { count: number }).count])).toEqual([
      [false, 700],
      [true, 1200],
    ]);
  });

  // Limiters of one name on several stores (shards, decision services) timed each store under
  // the name's one count: 500 names on 5 stores reached the SDK's cap in sluice.store.duration.
  it('counts each store a limiter name is timed on, so store durations stay under the SDK cap', async () => {
    const sdk = enabledSdk();
    const stores = Array.from({ length: 5 }, (_, i) => promiseStore(`shard-${i}`));
    for (let name = 0; name < 500; name++) {
      for (const store of stores)
        await createLimiter({ limit: 9, window: '1m', prefix: `n${name}`, store }).consume('k');
    }
    const durations = pointsOf(await sdk.collect(), METRICS.storeDuration);
    expect(durations.filter((p) => Object.keys(p.attributes).length === 1)).toEqual([]);
    expect(durations.reduce((sum, p) => sum + (p.value as { count: number }).count, 0)).toBe(2500);
    // A name takes a count, its allowed decisions one, and each store past its first one.
    const past = durations.filter((p) => p.attributes['otel.metric.overflow'] === true);
    expect(past.map((p) => p.attributes['sluice.store']).sort()).toEqual(stores.map((store) => store.name));
    expect(durations.length - past.length).toBe(166 * 5 + 3);
  });

  // Error types come from the failures (an error's `code`): past the bound each new one opened
  // a count of the overflow's and a histogram series, with no end.
  it('folds the error types of store errors past the bound into _OTHER', async () => {
    const sdk = enabledSdk();
    let failures = 0;
    const flaky: RateLimitStore = {
      name: 'flaky',
      consume: () => Promise.reject(Object.assign(new Error('failed'), { code: `E${failures++}` })),
      reset: () => Promise.resolve(),
      refund: () => Promise.resolve(),
    };
    const limiter = createLimiter({ limit: 1, window: '1m', prefix: 'flaky', store: flaky, logger: quiet });
    for (let i = 0; i < 1500; i++) await limiter.consume('k');
    const metrics = await sdk.collect();
    const errors = seriesOf(metrics, METRICS.storeErrors);
    // The limiter and its store_error result take two counts; its error types the other 998.
    expect(errors.filter(([attributes]) => 'sluice.limiter' in (attributes as object))).toHaveLength(998);
    expect(errors.filter(([attributes]) => 'otel.metric.overflow' in (attributes as object))).toEqual([
      [{ 'otel.metric.overflow': true, 'sluice.store': 'flaky', 'error.type': '_OTHER' }, 502],
    ]);
    const durations = pointsOf(metrics, METRICS.storeDuration);
    expect(durations).toHaveLength(999);
    expect(durations.filter((p) => p.attributes['error.type'] === '_OTHER')).toHaveLength(1);
  });

  it('keeps the heap where it was for 12,000 more limiters past the bound', async () => {
    const sdk = enabledSdk();
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
