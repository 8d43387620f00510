import { channel } from 'node:diagnostics_channel';
import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { metrics } from '@opentelemetry/api';
import type { Histogram } from '@opentelemetry/sdk-metrics';
import { createLimiter, hold, publishRulesReload, SLUICE_CHANNELS } from '@sluice/core';
import { createMemoryStore } from '@sluice/memory';
import { enableMetrics, METRICS } from '@sluice/otel';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { failingStore, promiseStore } from '../helpers/stores.js';
import { pointsOf, sdkMetrics, seriesOf } from './sdk.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  vi.useRealTimers();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function setup(options: Parameters<typeof enableMetrics>[0] = {}) {
  const sdk = sdkMetrics();
  const disable = enableMetrics({ meterProvider: sdk.meterProvider, ...options });
  cleanups.push(sdk.shutdown, disable);
  return { ...sdk, disable };
}

const quiet = { warn: () => {} };
const decisionSeries = (limiter: string, policy: string, counts: Record<string, number>) =>
  Object.entries(counts).map(([result, n]) => [
    { 'sluice.limiter': limiter, 'sluice.policy': policy, 'sluice.result': result },
    n,
  ]);

describe('enableMetrics', () => {
  it('counts decisions by limiter, policy and result', async () => {
    const { collect } = setup();
    const limiter = createLimiter({ name: 'api', limit: 3, window: '1m', prefix: 'web', clock: () => 0 });
    for (let i = 0; i < 5; i++) await limiter.consume('client');
    expect(seriesOf(await collect(), METRICS.decisions)).toEqual(
      decisionSeries('web', 'api', { allowed: 3, limited: 2 }),
    );
  });

  it('keeps limiters and policies apart when their decisions interleave', async () => {
    const { collect } = setup();
    // The same policy name on two limiters, and a limiter whose decisions report either policy:
    // `a` while it is the closer to its limit, then `b`.
    let now = 0;
    const clock = () => now;
    const web = createLimiter({ name: 'api', limit: 2, window: '1m', prefix: 'web', clock });
    const app = createLimiter({ name: 'api', limit: 1, window: '1m', prefix: 'app', clock });
    const both = createLimiter({
      policies: [
        { name: 'a', limit: 2, window: '1s' },
        { name: 'b', limit: 3, window: '1m' },
      ],
      prefix: 'both',
      clock,
    });
    for (let i = 0; i < 4; i++) {
      if (i === 2) now = 2000;
      await web.consume('k');
      await app.consume('k');
      await both.consume('k');
    }
    expect(seriesOf(await collect(), METRICS.decisions)).toEqual([
      ...decisionSeries('web', 'api', { allowed: 2, limited: 2 }),
      ...decisionSeries('app', 'api', { allowed: 1, limited: 3 }),
      ...decisionSeries('both', 'a', { allowed: 2 }),
      ...decisionSeries('both', 'b', { allowed: 1, limited: 1 }),
    ]);
  });

  it.each([
    [{ mode: 'soft', overagePercent: 100 }, 'soft'],
    [{ mode: 'shadow' }, 'shadow'],
  ] as const)('counts passes over the limit in %o as %s', async (throttle, result) => {
    const { collect } = setup();
    const limiter = createLimiter({ name: 'p', limit: 1, window: '1m', throttle, prefix: 't', clock: () => 0 });
    await limiter.consume('k');
    await limiter.consume('k');
    expect(seriesOf(await collect(), METRICS.decisions)).toEqual(decisionSeries('t', 'p', { allowed: 1, [result]: 1 }));
  });

  it('counts near-limit decisions as Envoy does: limit 10, the 9th and 10th hit', async () => {
    const { collect } = setup();
    const limiter = createLimiter({ name: 'p', limit: 10, window: '1m', prefix: 'n', clock: () => 0 });
    for (let i = 0; i < 12; i++) await limiter.consume('k');
    expect(seriesOf(await collect(), METRICS.nearLimit)).toEqual([
      [{ 'sluice.limiter': 'n', 'sluice.policy': 'p' }, 2],
    ]);
  });

  it('times a store that answers with a promise, in seconds, by limiter and store', async () => {
    const { collect } = setup();
    const limiter = createLimiter({ limit: 100, window: '1m', store: promiseStore(), prefix: 'r' });
    for (let i = 0; i < 4; i++) await limiter.consume(`k${i}`);
    const [point, ...others] = pointsOf(await collect(), METRICS.storeDuration);
    expect(others).toEqual([]);
    expect(point?.attributes).toEqual({ 'sluice.limiter': 'r', 'sluice.store': 'remote' });
    const histogram = point?.value as Histogram;
    expect(histogram.count).toBe(4);
    // Seconds, not milliseconds: an in-process promise answers well within a second.
    expect(histogram.max).toBeLessThan(1);
  });

  it('records a failed store call with error.type, counts the error and the fail-open pass', async () => {
    const { collect } = setup();
    const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    const limiter = createLimiter({
      name: 'p',
      limit: 5,
      window: '1m',
      store: failingStore(refused),
      prefix: 'f',
      logger: quiet,
    });
    await limiter.consume('a');
    await limiter.consume('b');
    const collected = await collect();
    expect(pointsOf(collected, METRICS.storeDuration).map((p) => [p.attributes, (p.value as Histogram).count])).toEqual(
      [[{ 'sluice.limiter': 'f', 'sluice.store': 'down', 'error.type': 'ECONNREFUSED' }, 2]],
    );
    expect(seriesOf(collected, METRICS.storeErrors)).toEqual([
      [{ 'sluice.limiter': 'f', 'sluice.store': 'down', 'error.type': 'ECONNREFUSED' }, 2],
    ]);
    expect(seriesOf(collected, METRICS.storeFailOpen)).toEqual([[{ 'sluice.limiter': 'f', 'sluice.policy': 'p' }, 2]]);
    expect(seriesOf(collected, METRICS.decisions)).toEqual(decisionSeries('f', 'p', { store_error: 2 }));
  });

  it('reports requests held in a queue now and how long each was held', async () => {
    vi.useFakeTimers();
    const sdk = setup();
    // The in-memory exporter answers on a 0 ms timer: run it without moving the clock.
    const collect = async () => {
      const collected = sdk.collect();
      await vi.advanceTimersByTimeAsync(0);
      return collected;
    };
    const response = () => Object.assign(new EventEmitter(), { destroyed: false, writableEnded: false });
    const held = hold(response() as unknown as ServerResponse, 2000, 'q');
    const left = response();
    const abandoned = hold(left as unknown as ServerResponse, 2000, 'q');
    expect(seriesOf(await collect(), METRICS.queueHeld)).toEqual([[{ 'sluice.limiter': 'q' }, 2]]);
    await vi.advanceTimersByTimeAsync(500);
    left.emit('close');
    await vi.advanceTimersByTimeAsync(1500);
    await Promise.all([held, abandoned]);
    const collected = await collect();
    expect(seriesOf(collected, METRICS.queueHeld)).toEqual([[{ 'sluice.limiter': 'q' }, 0]]);
    const durations = pointsOf(collected, METRICS.queueDuration).map((p) => [p.attributes, (p.value as Histogram).sum]);
    expect(durations).toEqual([
      [{ 'sluice.limiter': 'q', 'sluice.queue.completed': false }, 0.5],
      [{ 'sluice.limiter': 'q', 'sluice.queue.completed': true }, 2],
    ]);
  });

  it('reports the size and evictions of the memory stores it is given', async () => {
    const store = createMemoryStore({ maxKeys: 2 });
    const { collect } = setup({ memoryStores: { sessions: store } });
    const limiter = createLimiter({ limit: 5, window: '1m', store });
    for (const key of ['a', 'b', 'c', 'd', 'e']) await limiter.consume(key);
    const collected = await collect();
    expect(seriesOf(collected, METRICS.memoryKeys)).toEqual([[{ 'sluice.store': 'sessions' }, 2]]);
    expect(seriesOf(collected, METRICS.memoryEvictions)).toEqual([[{ 'sluice.store': 'sessions' }, 3]]);
  });

  it('counts reloads of rules applied and rejected, by source', async () => {
    const { collect } = setup();
    publishRulesReload({ source: 'rules.yaml', ok: true });
    publishRulesReload({ source: 'rules.yaml', ok: false, error: new Error('bad') });
    publishRulesReload({ source: 'rules.yaml', ok: true });
    const collected = await collect();
    expect(seriesOf(collected, METRICS.rulesReloads)).toEqual([[{ 'sluice.rules.source': 'rules.yaml' }, 2]]);
    expect(seriesOf(collected, METRICS.rulesReloadErrors)).toEqual([[{ 'sluice.rules.source': 'rules.yaml' }, 1]]);
  });

  it('stops counting after disable()', async () => {
    const { collect, disable } = setup();
    const limiter = createLimiter({ name: 'p', limit: 5, window: '1m', prefix: 'd', clock: () => 0 });
    await limiter.consume('k');
    expect(seriesOf(await collect(), METRICS.decisions)).toEqual(decisionSeries('d', 'p', { allowed: 1 }));
    disable();
    disable();
    await limiter.consume('k');
    // The SDK may repeat the last cumulative value it saw; it never sees the second decision.
    const after = seriesOf(await collect(), METRICS.decisions);
    expect(after.every(([, value]) => value === 1)).toBe(true);
    expect(channel(SLUICE_CHANNELS.decision).hasSubscribers).toBe(false);
  });

  it('uses the global meter provider by default', async () => {
    const sdk = sdkMetrics();
    metrics.setGlobalMeterProvider(sdk.meterProvider);
    cleanups.push(sdk.shutdown, () => metrics.disable());
    cleanups.push(enableMetrics());
    await createLimiter({ name: 'p', limit: 5, window: '1m', prefix: 'g' }).consume('k');
    expect(seriesOf(await sdk.collect(), METRICS.decisions)).toEqual(decisionSeries('g', 'p', { allowed: 1 }));
  });

  // Taken before the SDK registered, the global provider's meter stayed a no-op for good:
  // nothing was ever recorded, and every decision paid for being counted.
  it('warns, and counts nothing, when the global provider is still the no-op one', async () => {
    const warnings: string[] = [];
    cleanups.push(enableMetrics({ logger: { warn: (message) => warnings.push(message) } }));
    expect(warnings.join('\n')).toMatch(/WRN_SLUICE_METRICS_NOOP/);
    expect(channel(SLUICE_CHANNELS.decision).hasSubscribers).toBe(false);
  });

  // A second enableMetrics on one provider reported the same instruments from a tally of its
  // own, and the SDK kept the later, smaller count (5 shown of 10 decisions).
  it('refuses to be enabled twice on one provider until the first is disabled', async () => {
    const { meterProvider, collect, disable } = setup();
    expect(() => enableMetrics({ meterProvider })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_OPTION', message: expect.stringMatching(/already on/) }),
    );
    disable();
    cleanups.push(enableMetrics({ meterProvider }));
    const limiter = createLimiter({ name: 'api', limit: 10, window: '1m', prefix: 'again', clock: () => 0 });
    for (let i = 0; i < 3; i++) await limiter.consume('k');
    expect(seriesOf(await collect(), METRICS.decisions)).toEqual(decisionSeries('again', 'api', { allowed: 3 }));
  });

  // The threshold was the first version's: after a limit of 1000 became 10 under one name,
  // decisions leaving 9, 8 and 7 of 10 were not counted near the limit.
  it('counts near the limit against the capacity of the version that decided', async () => {
    const { collect } = setup();
    const options = { name: 'api', window: '1m', prefix: 'changed', clock: () => 0 } as const;
    await createLimiter({ ...options, limit: 1000 }).consume('a');
    const smaller = createLimiter({ ...options, limit: 10 });
    for (let i = 0; i < 3; i++) await smaller.consume('b');
    expect(seriesOf(await collect(), METRICS.nearLimit)).toEqual([
      [{ 'sluice.limiter': 'changed', 'sluice.policy': 'api' }, 0],
    ]);
  });

  it('rejects bad options with a coded error', () => {
    expect(() => enableMetrics({ meterProvder: {} } as never)).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_UNKNOWN_OPTION' }),
    );
    expect(() => enableMetrics({ meterProvider: {} as never })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_OPTION', message: expect.stringMatching(/meterProvider/) }),
    );
    expect(() => enableMetrics({ memoryStores: { a: createLimiter({ limit: 1, window: '1s' }) as never } })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_OPTION', message: expect.stringMatching(/memoryStores\.a/) }),
    );
    expect(() => enableMetrics(null as never)).toThrow(expect.objectContaining({ code: 'ERR_SLUICE_INVALID_OPTION' }));
  });
});
