import { type ServiceError, status } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnvoyClient } from '../helpers/envoy-client.js';
import { isCi } from '../helpers/redis-env.js';
import { type RedisProxy, startRedisProxy } from '../helpers/redis-proxy.js';
import { hasRedisServer, type RedisServer, startRedisServer, waitFor } from '../helpers/redis-server.js';
import { startSluice } from '../helpers/sluice-process.js';

const rules = new URL('./fixtures/edge.yaml', import.meta.url).pathname;
const skip = !hasRedisServer() && !isCi;
const one = (value: string) => ({ domain: 'edge', descriptors: [{ entries: [{ key: 'exact', value }] }] });

describe.skipIf(skip)('sluice serve on a Redis that stalls with its connection open', () => {
  let redis: RedisServer;
  let proxy: RedisProxy;
  beforeAll(async () => {
    redis = await startRedisServer();
    proxy = await startRedisProxy(redis.port);
  });
  afterAll(async () => {
    await proxy?.close();
    await redis?.stop();
  });

  const serveThroughProxy = (...args: string[]) =>
    startSluice(['--rules', rules, '--redis', `redis://127.0.0.1:${proxy.port}`, ...args]);

  it('sends one call a second once a call goes unanswered: calls answered UNAVAILABLE no longer spend quota when Redis resumes', async () => {
    const sluice = await serveThroughProxy();
    const envoy = createEnvoyClient(sluice.grpcAddress);
    const value = `stall-${process.pid}-${Date.now()}`;
    const ask = () =>
      envoy.shouldRateLimit(one(value)).then(
        (response) => response.statuses?.[0]?.limit_remaining ?? response.overall_code,
        (error: ServiceError) => (error.code === status.UNAVAILABLE ? 'UNAVAILABLE' : error.message),
      );
    try {
      expect(await ask()).toBe(99);
      proxy.hold();
      // Sent, then given up on after the store timeout: it may count once Redis resumes.
      expect(await ask()).toBe('UNAVAILABLE');
      const startedAt = performance.now();
      for (let i = 0; i < 30; i++) expect(await ask()).toBe('UNAVAILABLE');
      // Of those 30, only one a second goes to Redis, to look whether it answers again; each of
      // them used to wait in the stalled connection, and charge once it resumed.
      const looks = Math.floor((performance.now() - startedAt) / 1000) + 1;
      expect(looks).toBeLessThan(10);
      proxy.release();
      await waitFor('SERVING once Redis answers', async () => (await fetch(`${sluice.httpUrl}/healthcheck`)).ok);
      // The held call, the looks, and this one.
      const remaining = await ask();
      expect(remaining).toBeLessThanOrEqual(97);
      expect(remaining).toBeGreaterThanOrEqual(97 - looks);
    } finally {
      proxy.release();
      envoy.close();
      await sluice.kill();
    }
  });

  it('exits 0 on SIGTERM while Redis stalls, without waiting for an answer to QUIT', async () => {
    const sluice = await serveThroughProxy();
    try {
      proxy.hold();
      const stoppedAt = performance.now();
      sluice.child.kill('SIGTERM');
      expect(await sluice.exited).toBe(0);
      expect(performance.now() - stoppedAt).toBeLessThan(5000);
    } finally {
      proxy.release();
      await sluice.kill('SIGKILL');
    }
  });

  it('exits at once on a second signal of the other kind (SIGINT after SIGTERM waited for the drain)', async () => {
    const sluice = await serveThroughProxy('--store-timeout-ms', '10000');
    const envoy = createEnvoyClient(sluice.grpcAddress);
    try {
      await envoy.shouldRateLimit(one(`signals-${process.pid}`));
      proxy.hold();
      const inFlight = envoy.shouldRateLimit(one(`signals-${process.pid}`)).catch(() => undefined);
      await waitFor('the call to reach Redis', async () => proxy.heldBytes > 0);
      sluice.child.kill('SIGTERM');
      await waitFor('shutdown to begin', async () =>
        sluice.lines.some((l) => String(l.msg).startsWith('shutting down')),
      );
      const interruptedAt = performance.now();
      sluice.child.kill('SIGINT');
      expect(await sluice.exited).toBe(1);
      expect(performance.now() - interruptedAt).toBeLessThan(3000);
      await inFlight;
    } finally {
      proxy.release();
      envoy.close();
      await sluice.kill('SIGKILL');
    }
  });
});
