import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { type ServiceError, status } from '@grpc/grpc-js';
import type { RateLimitStore } from '@sluice/core';
import { createRedisStore } from '@sluice/redis';
import { parseRules } from '@sluice/rules';
import { createDecisionServer, type DecisionServer } from '@sluice/server';
import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createStoreHealth } from '../../packages/server/src/store-health.js';
import { createEnvoyClient, createHealthClient } from '../helpers/envoy-client.js';
import { standaloneRedis } from '../helpers/redis-env.js';
import { type RedisProxy, startRedisProxy } from '../helpers/redis-proxy.js';
import { waitFor } from '../helpers/redis-server.js';

const target = await standaloneRedis();
const rules = parseRules(`
domain: review
descriptors:
  - key: k
    rate_limit: { unit: hour, requests_per_unit: 100 }
  - key: free
    rate_limit: { unlimited: true }
`);
const quietLog = { line() {}, warn() {} };
const SERVICE = 'envoy.service.ratelimit.v3.RateLimitService';

describe.skipIf(target.skip)('health follows the store, not the calls', () => {
  let proxy: RedisProxy;
  let client: Redis;
  let server: DecisionServer;
  let envoy: ReturnType<typeof createEnvoyClient>;
  let health: ReturnType<typeof createHealthClient>;
  let httpHealth: () => Promise<number>;

  beforeEach(async () => {
    proxy = await startRedisProxy(Number(new URL(target.require()).port || 6379));
    // As `sluice serve` connects: no offline queue, so calls fail fast while Redis is away.
    client = new Redis(proxy.port, '127.0.0.1', {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => 50,
    });
    client.on('error', () => {});
    const store = createRedisStore({ client, prefix: `store-health-${process.pid}-${Date.now()}:` });
    server = createDecisionServer({ rules, store, grpcPort: 0, httpPort: 0, host: '127.0.0.1', log: quietLog });
    const { grpcPort, httpPort } = await server.listen();
    envoy = createEnvoyClient(`127.0.0.1:${grpcPort}`);
    health = createHealthClient(`127.0.0.1:${grpcPort}`);
    httpHealth = () => fetch(`http://127.0.0.1:${httpPort}/healthcheck`).then((r) => r.status);
  });
  afterEach(async () => {
    envoy.close();
    health.close();
    await server.close();
    client.disconnect();
    await proxy.close();
  });

  const call = (domain: string, key: string) =>
    envoy.shouldRateLimit({ domain, descriptors: [{ entries: [{ key, value: `v-${process.pid}` }] }] }).then(
      (response) => response.overall_code,
      (error: ServiceError) => error.code,
    );

  it('serves again without traffic once the store answers (one slow reply left it NOT_SERVING for good)', async () => {
    expect(await call('review', 'k')).toBe('OK');
    proxy.hold();
    expect(await call('review', 'k')).toBe(status.UNAVAILABLE);
    expect(await httpHealth()).toBe(503);
    expect(await health.check(SERVICE)).toBe('NOT_SERVING');
    proxy.release();
    // No call from here on: only the service's own look at the store can bring it back.
    await waitFor('SERVING without traffic', async () => (await httpHealth()) === 200, 5000);
    expect(await health.check(SERVICE)).toBe('SERVING');
    expect(await health.check('')).toBe('SERVING');
  });

  // The look that found the store back was published as a decision of
  // `sluice_limiter="sluice-health"`, which no rule has and no call made.
  it("publishes no decision of its own looks at the store: the metrics count the calls' alone", async () => {
    const seen = listen('sluice:decision');
    try {
      proxy.hold();
      expect(await call('review', 'k')).toBe(status.UNAVAILABLE);
      proxy.release();
      await waitFor('SERVING without traffic', async () => (await httpHealth()) === 200, 5000);
    } finally {
      seen.stop();
    }
    expect(seen.limiters).toEqual([]);
  });

  it('stays NOT_SERVING through calls that never reach the store (an unknown domain flipped it to SERVING)', async () => {
    proxy.silence();
    expect(await call('review', 'k')).toBe(status.UNAVAILABLE);
    expect(await httpHealth()).toBe(503);
    expect(await call('elsewhere', 'k')).toBe('OK');
    expect(await call('review', 'free')).toBe('OK');
    expect(await call('review', 'unmatched')).toBe('OK');
    expect(await httpHealth()).toBe(503);
    expect(await health.check(SERVICE)).toBe('NOT_SERVING');
    proxy.forward();
    await waitFor('SERVING once Redis answers', async () => (await httpHealth()) === 200, 5000);
    expect(await call('review', 'k')).toBe('OK');
  });
});

// Each failed look was published as a store error, one a second through an outage, against the
// one the call that found the outage made.
it('publishes no store error of its own looks at a store that fails', async () => {
  let looks = 0;
  const failing: RateLimitStore = {
    name: 'failing',
    consume: () => {
      looks++;
      return Promise.reject(new Error('down'));
    },
    reset: () => Promise.resolve(),
    refund: () => Promise.resolve(),
  };
  const health = createStoreHealth({ store: failing, storeTimeoutMs: 100, logger: quietLog, onChange() {} });
  const seen = listen('sluice:store-error');
  try {
    health.failed('a call failed');
    await waitFor('two looks at the store', async () => looks >= 2, 5000);
  } finally {
    seen.stop();
    health.close();
  }
  expect(seen.limiters).toEqual([]);
});

/** The limiters named by the events published on `channel` until `stop()`. */
function listen(channel: string) {
  const limiters: string[] = [];
  const hear = (event: unknown) => limiters.push((event as { limiter: string }).limiter);
  subscribe(channel, hear);
  return { limiters, stop: () => unsubscribe(channel, hear) };
}
