import { randomUUID } from 'node:crypto';
import type { OnStoreError } from '@sluice/core';
import type { Redis } from 'ioredis';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { connectRedis, redisTarget } from '../helpers/redis-env.js';
import { hasRedisServer, type RedisServer, startRedisServer } from '../helpers/redis-server.js';
import {
  confirmRecovery,
  expectFailPolicy,
  faultLimiter,
  heldInRedis,
  LATENCY_MARGIN_MS,
  STORE_TIMEOUT_MS,
  startLoad,
  watchUnhandledRejections,
} from './fault-harness.js';

const target = redisTarget('redis-server', hasRedisServer() || undefined, 'redis-server is not installed');

describe.skipIf(target.skip)('Redis killed mid-load and restarted', () => {
  const cleanup: (() => Promise<void> | void)[] = [];
  beforeAll(() => target.require());
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  it.each<OnStoreError>(['allow', 'deny', 'throw'])(
    "onStoreError '%s': bounded waits, the fail policy, one warning, no double count, recovery",
    async (onStoreError) => {
      const rejections = watchUnhandledRejections();
      cleanup.push(rejections.stop);
      const server: RedisServer = await startRedisServer();
      cleanup.push(() => server.stop());
      // A client as most apps create it: default reconnect and resend behaviour.
      const client: Redis = await connectRedis(server.url, { enableAutoPipelining: true });
      cleanup.push(() => {
        client.disconnect();
      });
      const prefix = `sluice-test:${randomUUID()}:`;
      const run = faultLimiter(client, prefix, onStoreError);
      cleanup.push(run.detach);
      const load = startLoad(run.limiter);

      await load.until('decisions from Redis before the crash', () => load.decidedByRedis() >= 300);
      await server.kill();
      const beforeRestart = load.outcomes.length;
      // Long enough that every call made before the crash has timed out before Redis is back.
      await load.until('the fail policy while Redis is gone', () => load.failed() >= 50);
      await new Promise((resolve) => setTimeout(resolve, 3 * STORE_TIMEOUT_MS));
      await server.start();
      await load.until('recovery once Redis is back', () => {
        const after = load.outcomes.slice(beforeRestart);
        return after.filter((o) => o.decision !== undefined && o.decision.reason === undefined).length >= 300;
      });
      await load.stop();
      await confirmRecovery(run.limiter);

      const slowest = Math.max(...load.outcomes.map((o) => o.latencyMs));
      expect(slowest).toBeLessThanOrEqual(STORE_TIMEOUT_MS + LATENCY_MARGIN_MS);
      expect(expectFailPolicy(load.outcomes, onStoreError)).toBeGreaterThanOrEqual(50);
      expect(run.warnings.filter((w) => w.includes('WRN_SLUICE_STORE_UNAVAILABLE'))).toHaveLength(1);
      expect(run.warnings.filter((w) => w.includes('WRN_SLUICE_STORE_RECOVERED'))).toHaveLength(1);
      // The crash took the old counts with it: what the new Redis holds is exactly what it
      // answered for, each charge once, in both policies alike.
      const admin = await connectRedis(server.url);
      cleanup.push(() => {
        admin.disconnect();
      });
      const held = await heldInRedis(admin, prefix);
      expect(held.counter).toBe(run.charged(true));
      expect(held.log).toBe(held.counter);
      expect(held.counter).toBeGreaterThanOrEqual(300);
      expect(client.status).toBe('ready');
      expect(rejections.seen).toEqual([]);
    },
    30_000,
  );
});
