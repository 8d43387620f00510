import { randomUUID } from 'node:crypto';
import type { OnStoreError } from '@sluice/core';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { connectRedis, redisTarget, waitReady } from '../helpers/redis-env.js';
import { type RedisProxy, startRedisProxy } from '../helpers/redis-proxy.js';
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
const policies: OnStoreError[] = ['allow', 'deny', 'throw'];

describe.skipIf(target.skip)('a Redis that accepts connections but never answers', () => {
  let server: RedisServer | undefined;
  let admin: Redis | undefined;
  const cleanup: (() => Promise<void> | void)[] = [];

  beforeAll(async () => {
    target.require();
    server = await startRedisServer();
    admin = await connectRedis(server.url);
  });
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });
  afterAll(async () => {
    admin?.disconnect();
    await server?.stop();
  });

  async function setUp(onStoreError: OnStoreError, mode: 'forward' | 'silent') {
    const rejections = watchUnhandledRejections();
    cleanup.push(rejections.stop);
    const proxy: RedisProxy = await startRedisProxy((server as RedisServer).port, mode);
    cleanup.push(() => proxy.close());
    const client = new Redis(proxy.port, '127.0.0.1', { enableAutoPipelining: true, maxRetriesPerRequest: 0 });
    client.on('error', () => {});
    cleanup.push(() => {
      client.disconnect();
    });
    if (mode === 'forward') await waitReady(client, 5000);
    const prefix = `sluice-test:${randomUUID()}:`;
    const run = faultLimiter(client, prefix, onStoreError);
    cleanup.push(run.detach);
    return { rejections, proxy, client, prefix, run, load: startLoad(run.limiter) };
  }

  async function expectAfterwards(onStoreError: OnStoreError, t: Awaited<ReturnType<typeof setUp>>) {
    const slowest = Math.max(...t.load.outcomes.map((o) => o.latencyMs));
    expect(slowest).toBeLessThanOrEqual(STORE_TIMEOUT_MS + LATENCY_MARGIN_MS);
    expect(expectFailPolicy(t.load.outcomes, onStoreError)).toBeGreaterThanOrEqual(30);
    expect(t.run.warnings.filter((w) => w.includes('WRN_SLUICE_STORE_UNAVAILABLE'))).toHaveLength(1);
    expect(t.run.warnings.filter((w) => w.includes('WRN_SLUICE_STORE_RECOVERED'))).toHaveLength(1);
    // Nothing Redis received was lost and nothing ran twice: it holds exactly the charges it
    // answered for, late answers to calls the limiter had given up on included, less what was
    // given back of those ('deny' gives back what a late answer charged).
    const held = await heldInRedis(admin as Redis, t.prefix);
    expect(held.counter).toBe(t.run.charged());
    expect(held.log).toBe(held.counter);
    expect(t.client.status).toBe('ready');
    expect(t.rejections.seen).toEqual([]);
  }

  it.each(policies)(
    "onStoreError '%s', silent mid-load: every call ends within storeTimeoutMs, then recovers",
    async (onStoreError) => {
      const t = await setUp(onStoreError, 'forward');
      await t.load.until('decisions before the silence', () => t.load.decidedByRedis() >= 200);
      t.proxy.silence();
      await t.load.until('timeouts while Redis is silent', () => t.load.failed() >= 30);
      // Let every call sent before the silence be answered before the network comes back.
      await new Promise((resolve) => setTimeout(resolve, 2 * STORE_TIMEOUT_MS));
      const before = t.load.decidedByRedis();
      t.proxy.forward();
      await t.load.until('recovery', () => t.load.decidedByRedis() >= before + 200);
      await t.load.stop();
      await confirmRecovery(t.run.limiter);
      const timedOut = t.load.outcomes.filter((o) => o.latencyMs >= STORE_TIMEOUT_MS - 5);
      expect(timedOut.length).toBeGreaterThan(0);
      await expectAfterwards(onStoreError, t);
    },
    30_000,
  );

  it.each(policies)(
    "onStoreError '%s', silent from the start: calls wait for the first connection up to storeTimeoutMs, then recover",
    async (onStoreError) => {
      const t = await setUp(onStoreError, 'silent');
      await t.load.until('the fail policy', () => t.load.failed() >= 30);
      expect(t.client.status).not.toBe('ready');
      // Each waited for the connection as long as the limiter lets a store call take.
      const latencies = t.load.outcomes.map((o) => o.latencyMs);
      expect(Math.min(...latencies)).toBeGreaterThanOrEqual(STORE_TIMEOUT_MS - 5);
      t.proxy.forward();
      await t.load.until('recovery', () => t.load.decidedByRedis() >= 200);
      await t.load.stop();
      await confirmRecovery(t.run.limiter);
      await expectAfterwards(onStoreError, t);
    },
    30_000,
  );
});
