import { createLimiter, type Logger } from '@sluice/core';
import { createRedisStore, type RedisStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { manualClock } from '../helpers/clock.js';
import { redisTarget } from '../helpers/redis-env.js';
import { startRedisProxy } from '../helpers/redis-proxy.js';
import { hasRedisServer, waitFor } from '../helpers/redis-server.js';
import { privateRedis } from './private-redis.js';

const target = redisTarget('redis-server', hasRedisServer() || undefined, 'redis-server is not installed');
const quiet: Logger = { warn() {} };
const WINDOW_MS = 60_000;
const START = 1_700_000_040_000 - (1_700_000_040_000 % WINDOW_MS) + 1000;
const windowKey = (prefix: string, key: string) =>
  `${prefix}lf:{m|${key}}:_0@${WINDOW_MS}:${Math.floor(START / WINDOW_MS)}`;

describe('Redis store, local-first mode: the maxKeys option', () => {
  it.each([0, -1, 1.5, 2 ** 31, '100', Number.NaN])('refuses maxKeys %s', (maxKeys) => {
    const client = new Redis({ lazyConnect: true, maxRetriesPerRequest: 0 });
    expect(() => createRedisStore({ client, localFirst: { syncIntervalMs: 50, maxKeys: maxKeys as number } })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_OPTION', message: expect.stringContaining('maxKeys') }),
    );
    client.disconnect();
  });
});

// Every client decided on in a window still read was kept, with no bound: a key taken from
// request data (rotating IPv6 prefixes or API keys) grew the process's memory without end.
describe.skipIf(target.skip)('Redis store, local-first mode: a table of at most maxKeys clients', () => {
  const redis = privateRedis();
  const clients: Redis[] = [];
  const stores: RedisStore[] = [];
  const open = (prefix: string, maxKeys: number) => {
    const client = new Redis(redis.server.port, '127.0.0.1', { maxRetriesPerRequest: 0 });
    clients.push(client);
    const store = createRedisStore({ client, prefix, logger: quiet, localFirst: { syncIntervalMs: 60_000, maxKeys } });
    stores.push(store);
    return store;
  };
  const limiterOn = (store: RedisStore) =>
    createLimiter({
      limit: 10,
      window: '1m',
      algorithm: 'fixed-window',
      store,
      clock: manualClock(START),
      prefix: 'm',
    });

  afterEach(async () => {
    for (const store of stores.splice(0)) await store.localFirst?.close().catch(() => {});
    for (const client of clients.splice(0)) client.disconnect();
    await redis.admin.flushall();
  });

  it('keeps at most maxKeys of many clients, and a client it forgot loses none of its count', async () => {
    const store = open('a:', 100);
    const limiter = limiterOn(store);
    expect(await limiter.consume('victim', { cost: 4 })).toMatchObject({ allowed: true, remaining: 6 });
    await store.localFirst?.sync();
    const keys = Array.from({ length: 300 }, (_, i) => `c${i}`);
    const fieldsOf = async () => Promise.all(keys.map((key) => redis.admin.hkeys(windowKey('a:', key))));
    for (let batch = 0; batch < keys.length; batch += 50) {
      await Promise.all(keys.slice(batch, batch + 50).map((key) => limiter.consume(key)));
      await store.localFirst?.sync();
    }
    const before = await fieldsOf();

    // Forgotten: another process still finds its count in Redis, and it is limited with it here.
    const other = limiterOn(open('a:', 100));
    expect(await other.peek('victim')).toMatchObject({ remaining: 6 });
    expect(await limiter.consume('victim')).toMatchObject({ allowed: true, remaining: 5 });
    await store.localFirst?.sync();
    const victim = Object.values(await redis.admin.hgetall(windowKey('a:', 'victim'))).map(Number);
    expect(victim.sort()).toEqual([1, 4]);

    // A client met again after it was forgotten writes a field of its own: at most 100 kept theirs.
    for (let batch = 0; batch < keys.length; batch += 50) {
      await Promise.all(keys.slice(batch, batch + 50).map((key) => limiter.consume(key)));
      await store.localFirst?.sync();
    }
    const after = await fieldsOf();
    const kept = after.filter((fields, i) => fields.length === 1 && fields[0] === before[i]?.[0]).length;
    expect(kept).toBeLessThanOrEqual(100);
    // Nothing was lost: each client's two decisions count, in one field or two.
    const totals = await Promise.all(
      keys.map(async (key) =>
        Object.values(await redis.admin.hgetall(windowKey('a:', key))).reduce((a, b) => a + Number(b), 0),
      ),
    );
    expect(totals.every((total) => total === 2)).toBe(true);
  });

  it('starts the sync a new client waits for when every client kept has counts Redis has not got', async () => {
    // An interval of a minute: the late client is decided only if its wait starts a sync itself.
    const store = open('b:', 10);
    const limiter = limiterOn(store);
    await Promise.all(Array.from({ length: 10 }, (_, i) => limiter.consume(`c${i}`)));
    expect(await limiter.consume('late')).toMatchObject({ allowed: true, remaining: 9 });
    // The ten were written before one of them was forgotten.
    const counts = await Promise.all(
      Array.from({ length: 10 }, (_, i) => redis.admin.hgetall(windowKey('b:', `c${i}`))),
    );
    expect(counts.map((fields) => Object.values(fields))).toEqual(Array.from({ length: 10 }, () => ['1']));
  });

  // Regression: clients arriving together past maxKeys waited for the sync interval (a minute
  // here), one table's worth a tick: a waiter found no client decided on yet (their first reads
  // still on the way), and one that found some asked for a sync while the last was ending, and
  // was given that one's end.
  it('decides many new clients arriving at once past maxKeys without waiting for the interval', async () => {
    const store = open('c:', 10);
    const limiter = limiterOn(store);
    const keys = Array.from({ length: 60 }, (_, i) => `c${i}`);
    // Within the test's timeout, far below the interval.
    const decisions = await Promise.all(keys.map((key) => limiter.consume(key)));
    expect(decisions.every((decision) => decision.allowed && decision.remaining === 9)).toBe(true);
    await store.localFirst?.sync();
    const totals = await Promise.all(keys.map((key) => redis.admin.hvals(windowKey('c:', key))));
    expect(totals.map((fields) => fields.map(Number))).toEqual(keys.map(() => [1]));
  });

  // Kept over the bound through an outage, the table only ever forgot one client per new one,
  // and stayed over it until the windows ended: 20,000 clients at maxKeys 100 held 30 MB.
  it('comes back to maxKeys once the sync after an outage has written what it kept', async () => {
    const proxy = await startRedisProxy(redis.server.port);
    const client = new Redis(proxy.port, '127.0.0.1', { maxRetriesPerRequest: 0 });
    client.on('error', () => {});
    clients.push(client);
    // A sync's bound is then 200 ms: each call to the silent Redis fails that soon.
    const store = createRedisStore({
      client,
      prefix: 'd:',
      logger: quiet,
      localFirst: { syncIntervalMs: 60_000, maxKeys: 10 },
    });
    stores.push(store);
    const limiter = limiterOn(store);
    try {
      proxy.silence();
      const outage = Array.from({ length: 50 }, (_, i) => `o${i}`);
      for (const key of outage) expect((await limiter.consume(key)).allowed).toBe(true);
      proxy.forward();
      await waitFor(
        'a sync to reach Redis again',
        async () =>
          (await store.localFirst?.sync().then(
            () => true,
            () => false,
          )) ?? false,
      );
      const reads = async () => {
        const stats = await redis.admin.info('commandstats');
        return ['eval', 'evalsha'].reduce(
          (sum, name) => sum + Number(stats.match(new RegExp(`cmdstat_${name}:calls=(\\d+)`))?.[1] ?? 0),
          0,
        );
      };
      const before = await reads();
      for (const key of outage) expect(await limiter.consume(key)).toMatchObject({ allowed: true, remaining: 8 });
      // At most 10 were kept: the others are read from Redis again before they decide.
      expect((await reads()) - before).toBeGreaterThanOrEqual(40);
    } finally {
      await proxy.close();
    }
  });
});
