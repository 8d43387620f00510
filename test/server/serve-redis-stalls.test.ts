import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { type ServiceError, status } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnvoyClient } from '../helpers/envoy-client.js';
import { isCi } from '../helpers/redis-env.js';
import { type RedisProxy, startRedisProxy } from '../helpers/redis-proxy.js';
import { hasRedisServer, type RedisServer, startRedisServer, waitFor } from '../helpers/redis-server.js';
import { exitOf, startSluice } from '../helpers/sluice-process.js';

const rules = new URL('./fixtures/edge.yaml', import.meta.url).pathname;
const rulesDir = mkdtempSync(join(tmpdir(), 'sluice-stall-rules-'));
/** A rules file of one descriptor limited to `limit` an hour, for publish-rules. */
function rulesWithLimit(limit: number): string {
  const file = join(rulesDir, `limit-${limit}.yaml`);
  writeFileSync(
    file,
    `domain: edge\ndescriptors:\n  - key: k\n    rate_limit: { unit: hour, requests_per_unit: ${limit} }\n`,
  );
  return file;
}
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

  // Closing the rules watcher first waited for a reload whose read the stalled Redis never
  // answered: the service logged `stopped` and ran on until the connection was reset.
  it('exits 0 on SIGTERM while a rules reload waits on the stalled Redis', async () => {
    const key = `stall-rules-${process.pid}`;
    const publish = (limit: number) =>
      exitOf(['publish-rules', '--rules', rulesWithLimit(limit), '--rules-key', key, '--redis', redis.url]);
    expect((await publish(5)).code).toBe(0);
    const sluice = await startSluice(['--rules-key', key, '--redis', `redis://127.0.0.1:${proxy.port}`]);
    try {
      proxy.hold();
      // Announced to the service (replies still flow), whose read of the new rules is held.
      expect((await publish(6)).code).toBe(0);
      await waitFor('the reload to read from Redis', async () => proxy.heldBytes > 0);
      const stoppedAt = performance.now();
      sluice.child.kill('SIGTERM');
      expect(await Promise.race([sluice.exited, sleep(5000).then(() => 'running')])).toBe(0);
      // QUIT's 1 s, then the connection ends and the reload with it.
      expect(performance.now() - stoppedAt).toBeLessThan(3000);
    } finally {
      proxy.release();
      await sluice.kill('SIGKILL');
    }
  });

  it('exits at once on a second signal of the other kind (SIGINT after SIGTERM waited for the drain)', async () => {
    const sluice = await serveThroughProxy('--store-timeout-ms', '10000', '--request-timeout-ms', '40000');
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
