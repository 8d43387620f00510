import { createLimiter } from '@sluice/core';
import { createRedisStore, type RedisStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { manualClock } from '../helpers/clock.js';
import { redisTarget } from '../helpers/redis-env.js';
import { hasRedisServer } from '../helpers/redis-server.js';
import { privateRedis } from './private-redis.js';

const target = redisTarget('redis-server', hasRedisServer() || undefined, 'redis-server is not installed');
const START = 1_700_000_041_000;

// A first read and the timer's sync run side by side. Each exchange took every node with a call
// of the other's still out for a node that had stopped answering: on a healthy Redis a new
// client then skipped its read and decided as fresh (a client another process had used up
// passed again), a known one fell to the outage share, and the warnings flapped.
describe.skipIf(target.skip)('Redis store, local-first mode: a first read beside a sync under way', () => {
  const redis = privateRedis();
  const clients: Redis[] = [];
  const stores: RedisStore[] = [];
  const warnings: string[] = [];
  const open = () => {
    const client = new Redis(redis.server.port, '127.0.0.1', { maxRetriesPerRequest: 0 });
    clients.push(client);
    const logger = { warn: (message: string) => warnings.push(message) };
    const store = createRedisStore({ client, prefix: 'side:', logger, localFirst: { syncIntervalMs: 60_000 } });
    stores.push(store);
    return store;
  };

  afterEach(async () => {
    for (const store of stores.splice(0)) await store.localFirst?.close().catch(() => {});
    for (const client of clients.splice(0)) client.disconnect();
    warnings.length = 0;
    await redis.admin.flushall();
  });

  it("reads a new client's counts while a sync's call is still out, and warns of no outage", async () => {
    const clock = manualClock(START);
    const options = { limit: 5, window: '1h', algorithm: 'fixed-window', clock, prefix: 't' } as const;
    const a = open();
    const onA = createLimiter({ ...options, store: a });
    for (let i = 0; i < 5; i++) expect((await onA.consume('used-up')).allowed).toBe(true);
    await a.localFirst?.sync();

    const b = open();
    const onB = createLimiter({ ...options, store: b });
    expect((await onB.consume('other')).allowed).toBe(true);
    // Redis holds every call for 150 ms (well within the sync's bound of 1 s): the sync's call
    // is still out when the first read of `used-up` goes.
    await redis.admin.client('PAUSE', 150, 'ALL');
    const syncing = b.localFirst?.sync();
    const decision = await onB.consume('used-up');
    await syncing;
    expect(decision).toMatchObject({ allowed: false, remaining: 0 });
    expect(warnings).toEqual([]);
  });
});
