import { type ServiceError, status } from '@grpc/grpc-js';
import { createRedisStore } from '@sluice/redis';
import { parseRules } from '@sluice/rules';
import { createDecisionServer, type DecisionServer } from '@sluice/server';
import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
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
