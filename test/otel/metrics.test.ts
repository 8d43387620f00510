import { channel, subscribe, unsubscribe } from 'node:diagnostics_channel';
import { EventEmitter, once } from 'node:events';
import { type ClientRequest, get, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { metrics } from '@opentelemetry/api';
import { AggregationTemporality, type Histogram } from '@opentelemetry/sdk-metrics';
import { createLimiter, hold, publishRulesReload, SLUICE_CHANNELS } from '@sluice/core';
import { rateLimit } from '@sluice/express';
import { createMemoryStore } from '@sluice/memory';
import { enableMetrics, METRICS } from '@sluice/otel';
import express from 'express';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { manualClock } from '../helpers/clock.js';
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

  // Regression: a charge given back still read as a counted `allowed` decision, with nothing
  // to subtract: an app counting only failed requests showed every success as spent quota.
  it('counts the charges given back, by limiter, and not a refund the store failed to make', async () => {
    const { collect } = setup();
    // Each refund follows its response: the tally, subscribed first, has counted one once it is heard here.
    let heard = 0;
    const onRefund = () => heard++;
    subscribe(SLUICE_CHANNELS.refund, onRefund);
    cleanups.push(() => unsubscribe(SLUICE_CHANNELS.refund, onRefund));
    const app = express();
    app.use(rateLimit({ name: 'api', limit: 5, window: '1m', prefix: 'web', skipSuccessfulRequests: true }));
    app.get('/', (_req, res) => res.send('ok'));
    const server = app.listen(0, '127.0.0.1');
    cleanups.push(() => new Promise((resolve) => server.close(resolve)));
    await once(server, 'listening');
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    for (let i = 0; i < 3; i++) await (await fetch(url)).text();
    const down = createLimiter({
      limit: 5,
      window: '1m',
      store: failingStore(new Error('down')),
      prefix: 'down',
      logger: quiet,
    });
    await down.refund('k', 1);
    while (heard < 3) await new Promise((resolve) => setImmediate(resolve));
    const collected = await collect();
    expect(seriesOf(collected, METRICS.refunds)).toEqual([[{ 'sluice.limiter': 'web' }, 3]]);
    expect(seriesOf(collected, METRICS.decisions)).toEqual(decisionSeries('web', 'api', { allowed: 3 }));
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

  // The README said disable() stopped reporting; a cumulative reader goes on exporting the last
  // point of every series, as the SDK keeps them and offers no way to drop them.
  it('after disable(), leaves a cumulative reader repeating the last points and a delta reader none', async () => {
    const exported = async (temporality: AggregationTemporality) => {
      const sdk = sdkMetrics(undefined, temporality);
      cleanups.push(sdk.shutdown);
      const store = createMemoryStore();
      const disable = enableMetrics({ meterProvider: sdk.meterProvider, memoryStores: { main: store } });
      const limiter = createLimiter({ name: 'p', limit: 5, window: '1m', prefix: 'off', store, clock: () => 0 });
      await limiter.consume('a');
      const before = await sdk.collect();
      disable();
      await limiter.consume('b');
      return { before, after: [await sdk.collect(), await sdk.collect()] };
    };
    const cumulative = await exported(AggregationTemporality.CUMULATIVE);
    for (const after of cumulative.after) {
      expect(after.map((m) => m.descriptor.name)).toEqual(cumulative.before.map((m) => m.descriptor.name));
      expect(seriesOf(after, METRICS.decisions)).toEqual(decisionSeries('off', 'p', { allowed: 1 }));
      // The store holds two keys now; the gauge stays at its last reading.
      expect(seriesOf(after, METRICS.memoryKeys)).toEqual([[{ 'sluice.store': 'main' }, 1]]);
    }
    const delta = await exported(AggregationTemporality.DELTA);
    expect(seriesOf(delta.before, METRICS.decisions)).toEqual(decisionSeries('off', 'p', { allowed: 1 }));
    expect(delta.after).toEqual([[], []]);
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

  // A provider already shut down hands out no-op meters: the warning blamed the global provider,
  // which the caller had not used.
  it('warns that a meterProvider given hands out no-op meters, not that the global one does', async () => {
    const sdk = sdkMetrics();
    await sdk.shutdown();
    const warnings: string[] = [];
    cleanups.push(enableMetrics({ meterProvider: sdk.meterProvider, logger: { warn: (m) => warnings.push(m) } }));
    expect(warnings).toEqual([expect.stringMatching(/WRN_SLUICE_METRICS_NOOP: the `meterProvider` given.*shut down/)]);
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

  // Each enableMetrics counted from 0 while the SDK kept the provider's totals: 3 decisions,
  // disable(), enabled again, 5 more read 5 where 8 were made.
  it('goes on from its counts when enabled again on the same provider, counting nothing while off', async () => {
    const { meterProvider, collect, disable } = setup();
    const limiter = createLimiter({ name: 'api', limit: 100, window: '1m', prefix: 'toggle', clock: () => 0 });
    for (let i = 0; i < 3; i++) await limiter.consume('k');
    expect(seriesOf(await collect(), METRICS.decisions)).toEqual(decisionSeries('toggle', 'api', { allowed: 3 }));
    disable();
    await limiter.consume('k');
    cleanups.push(enableMetrics({ meterProvider }));
    for (let i = 0; i < 5; i++) await limiter.consume('k');
    expect(seriesOf(await collect(), METRICS.decisions)).toEqual(decisionSeries('toggle', 'api', { allowed: 8 }));
  });

  // A hold begun before enableMetrics (or before a disable and enable) was never added, but
  // its release was subtracted: the queue's depth read -1.
  it('subtracts only the holds it counted from the queue depth', async () => {
    vi.useFakeTimers();
    const sdk = sdkMetrics();
    cleanups.push(sdk.shutdown);
    const collect = async () => {
      const collected = sdk.collect();
      await vi.advanceTimersByTimeAsync(0);
      return seriesOf(await collected, METRICS.queueHeld);
    };
    const response = () => Object.assign(new EventEmitter(), { destroyed: false, writableEnded: false });
    const before = hold(response() as unknown as ServerResponse, 1000, 'q');
    let disable = enableMetrics({ meterProvider: sdk.meterProvider });
    const across = hold(response() as unknown as ServerResponse, 2000, 'q');
    expect(await collect()).toEqual([[{ 'sluice.limiter': 'q' }, 1]]);
    disable();
    disable = enableMetrics({ meterProvider: sdk.meterProvider });
    cleanups.push(disable);
    await vi.advanceTimersByTimeAsync(2000);
    expect([await before, await across]).toEqual([true, true]);
    expect(await collect()).toEqual([[{ 'sluice.limiter': 'q' }, 0]]);
  });

  // The limiter counted the decision as queued before the HTTP layer refused it for a full
  // queue (maxQueued): every 429 was counted queued, and near the limit.
  it('counts a request refused because the queue is full as limited, as its client saw it', async () => {
    const { collect } = setup();
    const app = express().use(
      rateLimit({
        policies: [{ name: 'queued', limit: 2, window: '2s', algorithm: 'gcra', queue: { maxDelayMs: '5s' } }],
        maxQueued: 1,
        prefix: 'full',
        clock: manualClock(),
        store: createMemoryStore(),
      }),
    );
    app.get('/', (_req, res) => res.send('ok'));
    const server: Server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    cleanups.push(() => {
      server.closeAllConnections();
      server.close();
    });
    const { port } = server.address() as AddressInfo;
    const requests: ClientRequest[] = [];
    const status = () =>
      new Promise<number | undefined>((resolve) => {
        const sent = get({ host: '127.0.0.1', port, path: '/', agent: false }, (res) => {
          res.resume();
          resolve(res.statusCode);
        });
        sent.on('error', () => resolve(undefined));
        requests.push(sent);
      });
    expect([await status(), await status()]).toEqual([200, 200]);
    // The third is held; the fourth, sent once the hold has begun, finds the queue full.
    const begun = new Promise<void>((resolve) => {
      const held = () => {
        unsubscribe(SLUICE_CHANNELS.queue, held);
        resolve();
      };
      subscribe(SLUICE_CHANNELS.queue, held);
    });
    const third = status();
    await begun;
    expect(await status()).toBe(429);
    requests[2]?.destroy();
    await third;
    const collected = await collect();
    expect(seriesOf(collected, METRICS.decisions)).toEqual(
      decisionSeries('full', 'queued', { allowed: 2, limited: 1, queued: 1 }),
    );
    // The second (none left after it) and the third (queued); not the refused fourth.
    expect(seriesOf(collected, METRICS.nearLimit)).toEqual([
      [{ 'sluice.limiter': 'full', 'sluice.policy': 'queued' }, 2],
    ]);
  });

  it('counts a shadow pass while the store failed as fail-open, whatever the fail policy', async () => {
    const { collect } = setup();
    const limiter = createLimiter({
      name: 'p',
      limit: 5,
      window: '1m',
      store: failingStore(new Error('down')),
      onStoreError: 'deny',
      throttle: { mode: 'shadow' },
      prefix: 's',
      logger: quiet,
    });
    expect(await limiter.consume('k')).toMatchObject({ allowed: true, reason: 'store-unavailable' });
    const collected = await collect();
    expect(seriesOf(collected, METRICS.decisions)).toEqual(decisionSeries('s', 'p', { store_error: 1 }));
    expect(seriesOf(collected, METRICS.storeFailOpen)).toEqual([[{ 'sluice.limiter': 's', 'sluice.policy': 'p' }, 1]]);
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
    // An array was taken for no options.
    expect(() => enableMetrics([] as never)).toThrow(expect.objectContaining({ code: 'ERR_SLUICE_INVALID_OPTION' }));
    // So was a Map: its entries are no properties, and nothing said why nothing was counted.
    expect(() => enableMetrics(new Map([['meterProvider', {}]]) as never)).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_OPTION', message: expect.stringMatching(/received a Map/) }),
    );
  });

  // A Map was read with Object.entries: no store was ever reported, and no error said why.
  it('refuses memoryStores given as a Map, not an object of stores by name', () => {
    const memoryStores = new Map([['main', createMemoryStore()]]) as never;
    expect(() => enableMetrics({ memoryStores })).toThrow(
      expect.objectContaining({
        code: 'ERR_SLUICE_INVALID_OPTION',
        message: expect.stringMatching(
          /`memoryStores` of enableMetrics must be a plain object of stores by name, such as `\{ main: store \}`; received a Map/,
        ),
      }),
    );
    expect(() => enableMetrics({ memoryStores: [createMemoryStore()] as never })).toThrow(
      expect.objectContaining({
        code: 'ERR_SLUICE_INVALID_OPTION',
        message: expect.stringMatching(/received an array/),
      }),
    );
  });
});
