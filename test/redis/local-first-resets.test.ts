import { createLimiter } from '@sluice/core';
import { createRedisStore, type RedisStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { manualClock } from '../helpers/clock.js';
import { redisTarget } from '../helpers/redis-env.js';
import { type RedisProxy, startRedisProxy } from '../helpers/redis-proxy.js';
import { hasRedisServer, waitFor } from '../helpers/redis-server.js';
import { privateRedis } from './private-redis.js';

const target = redisTarget('redis-server', hasRedisServer() || undefined, 'redis-server is not installed');
const WINDOW_MS = 60_000;
const START = 1_700_000_040_000 - (1_700_000_040_000 % WINDOW_MS) + 1000;
const windowKey = `resets:lf:{r|k}:_0@${WINDOW_MS}:${Math.floor(START / WINDOW_MS)}`;

describe.skipIf(target.skip)('Redis store, local-first mode: a reset', () => {
  const redis = privateRedis();
  const clients: Redis[] = [];
  const stores: RedisStore[] = [];
  const proxies: RedisProxy[] = [];
  const open = async (throughProxy = false, maxKeys = 100_000) => {
    const proxy = throughProxy ? await startRedisProxy(redis.server.port) : undefined;
    if (proxy !== undefined) proxies.push(proxy);
    const client = new Redis(proxy?.port ?? redis.server.port, '127.0.0.1', { maxRetriesPerRequest: 0 });
    client.on('error', () => {});
    clients.push(client);
    const store = createRedisStore({
      client,
      prefix: 'resets:',
      logger: { warn() {} },
      localFirst: { syncIntervalMs: 60_000, maxKeys },
    });
    stores.push(store);
    const limiter = createLimiter({
      limit: 5,
      window: '1m',
      algorithm: 'fixed-window',
      store,
      clock: manualClock(START),
      prefix: 'r',
      onStoreError: 'throw',
    });
    return { store, limiter, proxy };
  };

  afterEach(async () => {
    for (const store of stores.splice(0)) await store.localFirst?.close().catch(() => {});
    for (const client of clients.splice(0)) client.disconnect();
    for (const proxy of proxies.splice(0)) await proxy.close();
    await redis.admin.flushall();
  });

  // The read of an idle client wrote its old total, sent a turn after the reset's deletion: the
  // reset resolved, and Redis still held the 5 it had deleted.
  it('is not undone by the read of an idle client asked for in the same turn', async () => {
    const { store, limiter } = await open();
    for (let i = 0; i < 5; i++) expect((await limiter.consume('k')).allowed).toBe(true);
    // Idle through two syncs: its next decision reads the fleet first.
    for (let i = 0; i < 3; i++) await store.localFirst?.sync();
    const asked = limiter.consume('k');
    await limiter.reset('k');
    expect(await asked).toMatchObject({ allowed: false, remaining: 0 });
    expect(await redis.admin.hvals(windowKey)).toEqual([]);
    expect(await limiter.consume('k')).toMatchObject({ allowed: true, remaining: 4 });
  });

  // The client was forgotten here before the deletion was tried: a reset Redis never took,
  // reported failed under 'throw', still gave the client a fresh quota in this process, and
  // Redis ended with both totals (10 admitted of 5).
  it('that Redis never took leaves the client as it was', async () => {
    const { store, limiter, proxy } = await open(true);
    for (let i = 0; i < 5; i++) expect((await limiter.consume('k')).allowed).toBe(true);
    await store.localFirst?.sync();
    proxy?.silence();
    await expect(limiter.reset('k')).rejects.toMatchObject({ code: 'ERR_SLUICE_STORE_UNAVAILABLE' });
    expect(await limiter.consume('k')).toMatchObject({ allowed: false, remaining: 0 });
    proxy?.forward();
    // Once Redis answers again, a reset goes through.
    await waitFor('a reset to go through', async () =>
      limiter.reset('k').then(
        () => true,
        () => false,
      ),
    );
    expect(await redis.admin.hvals(windowKey)).toEqual([]);
    expect(await limiter.consume('k')).toMatchObject({ allowed: true, remaining: 4 });
  });

  // A sync while the reset waited skipped the client (its calls would undo the deletion) and
  // filed it as written; a new client then forgot it for room, and when the reset failed the
  // counts Redis never got were lost (3 admitted, then 4 more of 5).
  it('that Redis never took keeps counts a sync skipped meanwhile, even when the table needs room', async () => {
    const { store, limiter, proxy } = await open(true, 1);
    for (let i = 0; i < 3; i++) expect((await limiter.consume('x')).allowed).toBe(true);
    proxy?.silence();
    const reset = limiter.reset('x').then(
      () => 'made',
      (error: { code?: string }) => error.code,
    );
    await store.localFirst?.sync();
    // Kept over the bound: the only client held has counts Redis has not got.
    expect((await limiter.consume('y')).allowed).toBe(true);
    expect(await reset).toBe('ERR_SLUICE_STORE_UNAVAILABLE');
    expect(await limiter.consume('x')).toMatchObject({ allowed: true, remaining: 1 });
    expect(await limiter.consume('x')).toMatchObject({ allowed: true, remaining: 0 });
    expect((await limiter.consume('x')).allowed).toBe(false);
  });
});
