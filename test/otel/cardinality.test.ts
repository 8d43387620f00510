import { createLimiter } from '@sluice/core';
import { createMemoryStore } from '@sluice/memory';
import { enableMetrics } from '@sluice/otel';
import { afterEach, describe, expect, it } from 'vitest';
import { failingStore } from '../helpers/stores.js';
import { sdkMetrics } from './sdk.js';

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
});
