import { createLimiter, type Limiter } from '@sluice/core';
import { createRedisStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { connectRedis, redisTarget, waitReady } from '../helpers/redis-env.js';
import { type RedisProxy, startRedisProxy } from '../helpers/redis-proxy.js';
import { hasRedisServer, type RedisServer, startRedisServer } from '../helpers/redis-server.js';

const target = redisTarget('redis-server', hasRedisServer() || undefined, 'redis-server is not installed');

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * A private Redis, so that its command counts are this suite's alone, behind a proxy that can
 * hold a call on its way, so that it stays in flight for as long as a test needs.
 */
describe.skipIf(target.skip)('Redis store batching while a call is in flight', () => {
  let server: RedisServer | undefined;
  let proxy: RedisProxy;
  let admin: Redis;
  let client: Redis;
  let limiter: Limiter;

  beforeAll(async () => {
    target.require();
    server = await startRedisServer();
    proxy = await startRedisProxy(server.port);
    admin = await connectRedis(server.url);
  });

  afterAll(async () => {
    admin?.disconnect();
    await proxy?.close();
    await server?.stop();
  });

  beforeEach(async () => {
    client = new Redis(proxy.port, '127.0.0.1', { maxRetriesPerRequest: 0 });
    client.on('error', () => {});
    await waitReady(client, 5_000);
    limiter = createLimiter({ limit: 100, window: '1m', store: createRedisStore({ client }), storeTimeoutMs: 10_000 });
    // The script is loaded by the first call; count from here on.
    await limiter.consume('warm-up');
    await admin.config('RESETSTAT');
  });

  afterEach(() => {
    proxy.release();
    client.disconnect();
  });

  const scriptCalls = async () => {
    const stats = (await admin.info('commandstats')) as string;
    // EVAL the first time a call of that many keys runs on the connection, EVALSHA after.
    const calls = (name: string) => Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
    return calls('eval') + calls('evalsha');
  };

  /** The proxy runs in this process: what a client wrote reaches it a few turns later. */
  const untilHeld = async () => {
    for (let turn = 0; turn < 1000 && proxy.heldBytes === 0; turn++) await new Promise((r) => setTimeout(r, 0));
    return proxy.heldBytes;
  };

  it('sends a lone decision at the end of its turn: an idle connection never waits', async () => {
    proxy.hold();
    const decision = limiter.consume('alone');
    expect(await untilHeld()).toBeGreaterThan(0);
    proxy.release();
    expect((await decision).allowed).toBe(true);
    expect(await scriptCalls()).toBe(1);
  });

  it('gathers the decisions of later turns while a call is in flight, and sends them in one call when it lands', async () => {
    proxy.hold();
    const first = limiter.consume('first');
    const later: Promise<unknown>[] = [];
    for (let turn = 0; turn < 3; turn++) {
      await nextTurn();
      later.push(limiter.consume(`later-${turn}`), limiter.consume(`later-${turn}`));
    }
    const heldFirst = await untilHeld();
    await nextTurn();
    // Only the first call reached the proxy: the six decisions after it wait in the batcher.
    expect(proxy.heldBytes).toBe(heldFirst);
    proxy.release();
    await Promise.all([first, ...later]);
    expect(await scriptCalls()).toBe(2);
    const counted = await limiter.peek('later-1');
    expect(counted.remaining).toBe(98);
  });

  it('still sends a full batch at once, in flight or not', async () => {
    proxy.hold();
    const first = limiter.consume('first');
    await nextTurn();
    // 33 more: the 33rd finds 32 waiting and sends them; it then waits for the calls ahead.
    const more = Array.from({ length: 33 }, (_, i) => limiter.consume(`full-${i}`));
    await nextTurn();
    proxy.release();
    await Promise.all([first, ...more]);
    expect(await scriptCalls()).toBe(3);
  });
});
