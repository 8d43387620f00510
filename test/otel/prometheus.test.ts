import type { AddressInfo } from 'node:net';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { createLimiter, publishRulesReload } from '@sluice/core';
import { createMemoryStore } from '@sluice/memory';
import { createPrometheusMetrics, PROMETHEUS_CONTENT_TYPE } from '@sluice/otel/prometheus';
import express from 'express';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { afterEach, describe, expect, it } from 'vitest';
import { promiseStore } from '../helpers/stores.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

describe('createPrometheusMetrics', () => {
  it('serves the figures of enableMetrics on /metrics in Prometheus text', async () => {
    const store = createMemoryStore({ maxKeys: 2 });
    const prometheus = createPrometheusMetrics({ memoryStores: { main: store } });
    cleanups.push(prometheus.disable);
    const limiter = createLimiter({ name: 'api', limit: 2, window: '1m', prefix: 'web', store, clock: () => 0 });
    for (const key of ['a', 'a', 'a', 'b', 'c']) await limiter.consume(key);
    publishRulesReload({ source: 'rules.yaml', ok: false, error: new Error('bad') });

    const app = express().get('/metrics', async (_req, res) => {
      res.type(prometheus.contentType).send(await prometheus.render());
    });
    const server = app.listen(0, '127.0.0.1');
    cleanups.push(() => new Promise((resolve) => server.close(resolve)));
    await new Promise((resolve) => server.once('listening', resolve));
    const response = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`);
    expect(response.headers.get('content-type')).toBe(PROMETHEUS_CONTENT_TYPE);

    const families = parsePrometheusTextFormat(await response.text());
    const family = (name: string) => families.find((f) => f.name === name);
    expect(family('sluice_decisions_total')).toMatchObject({
      type: 'COUNTER',
      metrics: [
        { labels: { sluice_limiter: 'web', sluice_policy: 'api', sluice_result: 'allowed' }, value: '4' },
        { labels: { sluice_limiter: 'web', sluice_policy: 'api', sluice_result: 'limited' }, value: '1' },
      ],
    });
    // Limit 2: Envoy's threshold is ⌊2 × 0.8⌋ = 1 in use, so only the hit that leaves none is near.
    expect(family('sluice_near_limit_total')?.metrics).toEqual([
      { labels: { sluice_limiter: 'web', sluice_policy: 'api' }, value: '1' },
    ]);
    expect(family('sluice_memory_keys')).toMatchObject({ type: 'GAUGE', metrics: [{ value: '2' }] });
    expect(family('sluice_memory_evictions_total')?.metrics).toEqual([
      { labels: { sluice_store: 'main' }, value: '1' },
    ]);
    expect(family('sluice_rules_reload_errors_total')?.metrics).toEqual([
      { labels: { sluice_rules_source: 'rules.yaml' }, value: '1' },
    ]);
    // Only sluice's own series: no target_info or scope labels from the private provider.
    expect(families.every((f) => f.name.startsWith('sluice_'))).toBe(true);
  });

  it('renders a store latency histogram in seconds with its buckets', async () => {
    const prometheus = createPrometheusMetrics();
    cleanups.push(prometheus.disable);
    const limiter = createLimiter({ limit: 10, window: '1m', prefix: 'remote', store: promiseStore() });
    await limiter.consume('k');
    await limiter.consume('k');
    const text = await prometheus.render();
    const histogram = parsePrometheusTextFormat(text).find((f) => f.name === 'sluice_store_duration_seconds');
    expect(histogram?.type).toBe('HISTOGRAM');
    // The parser folds a histogram's buckets into one sample and drops its labels, `_count` and
    // `_sum`: those are read from the lines themselves.
    expect(histogram?.metrics.map((m) => m.buckets)).toEqual([expect.objectContaining({ '1': '2', '+Inf': '2' })]);
    expect(text).toContain('sluice_store_duration_seconds_count{sluice_limiter="remote",sluice_store="remote"} 2\n');
  });

  // A `meterProvider` was spread under the private one and dropped without a word, null and an
  // array were taken for no options, and other errors named enableMetrics.
  it('refuses a meterProvider, which it would drop for its own, and options that are no object', () => {
    expect(() => createPrometheusMetrics({ meterProvider: new MeterProvider() } as never)).toThrow(
      expect.objectContaining({
        code: 'ERR_SLUICE_UNKNOWN_OPTION',
        message: expect.stringMatching(
          /createPrometheusMetrics option `meterProvider`.*enableMetrics\(\{ meterProvider \}\)/,
        ),
      }),
    );
    expect(() => createPrometheusMetrics({ meterProvider: new MeterProvider(), foo: 1 } as never)).toThrow(
      /option `meterProvider`.*Unknown too: `foo`\./,
    );
    // A Map's entries are no options: it was taken for none.
    for (const options of [null, [], 'x', new Map([['memoryStores', {}]])]) {
      expect(() => createPrometheusMetrics(options as never)).toThrow(
        expect.objectContaining({
          code: 'ERR_SLUICE_INVALID_OPTION',
          message: expect.stringMatching(/`options` of createPrometheusMetrics must be a plain object/),
        }),
      );
    }
    for (const main of [{}, { size: Number.NaN, evictions: 0 }]) {
      expect(() => createPrometheusMetrics({ memoryStores: { main } } as never)).toThrow(
        expect.objectContaining({ message: expect.stringMatching(/`memoryStores\.main` of createPrometheusMetrics/) }),
      );
    }
  });

  // The decision service appends its own metrics to this text: they joined the comment line.
  it('ends its text in a line feed before any decision too', async () => {
    const prometheus = createPrometheusMetrics();
    cleanups.push(prometheus.disable);
    const empty = await prometheus.render();
    expect(empty.endsWith('\n')).toBe(true);
    expect(`${empty}# HELP other_total Another registry's metric.\n`.split('\n')).toContain(
      "# HELP other_total Another registry's metric.",
    );
    await createLimiter({ limit: 1, window: '1m', prefix: 'line-feed', clock: () => 0 }).consume('a');
    expect((await prometheus.render()).endsWith('\n')).toBe(true);
  });

  it('after disable(), render() rejects with a coded error and metrics may be enabled afresh', async () => {
    const prometheus = createPrometheusMetrics();
    await Promise.all([prometheus.disable(), prometheus.disable()]);
    await expect(prometheus.render()).rejects.toMatchObject({
      code: 'ERR_SLUICE_UNSUPPORTED',
      message: expect.stringMatching(/render\(\) after disable\(\)/),
    });
    const next = createPrometheusMetrics();
    cleanups.push(next.disable);
    await createLimiter({ limit: 1, window: '1m', prefix: 'again', clock: () => 0 }).consume('a');
    expect(await next.render()).toMatch(/sluice_decisions_total\{sluice_limiter="again"/);
  });
});
