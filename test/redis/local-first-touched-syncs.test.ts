import { createLimiter, type Logger } from '@sluice/core';
import { createRedisStore, type RedisStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { manualClock } from '../helpers/clock.js';
import { redisTarget } from '../helpers/redis-env.js';
import { hasRedisServer } from '../helpers/redis-server.js';
import { privateRedis } from './private-redis.js';

const target = redisTarget('redis-server', hasRedisServer() || undefined, 'redis-server is not installed');
const quiet: Logger = { warn() {} };
const WINDOW_MS = 60_000;
const START = 1_700_000_040_000 - (1_700_000_040_000 % WINDOW_MS) + 1000;

/** Calls of `command` the server has run since its stats were reset, scripts' own included. */
async function calls(admin: Redis, command: string): Promise<number> {
  const stats = await admin.info('commandstats');
  return Number(stats.match(new RegExp(`cmdstat_${command}:calls=(\\d+)`))?.[1] ?? 0);
}

/** The fields of each client's window key, one client after another. */
async function fieldsOf(admin: Redis, prefix: string, keys: readonly string[], window: number): Promise<string[][]> {
  const pipeline = admin.pipeline();
  for (const key of keys) pipeline.hkeys(`${prefix}lf:{t|${key}}:_0@${WINDOW_MS}:${window}`);
  return ((await pipeline.exec()) ?? []).map(([, fields]) => fields as string[]);
}

// Each sync walked every client this process knew, idle ones included: 100,000 idle clients of
// an hour cost every sync milliseconds of CPU whatever had changed. A sync now takes the clients
// decided on since the last one; these tests pin what it writes, reads and forgets.
describe.skipIf(target.skip)(
  'Redis store, local-first mode: a sync works on the clients touched since the last',
  () => {
    const redis = privateRedis();
    const clients: Redis[] = [];
    const stores: RedisStore[] = [];
    const open = (prefix: string) => {
      const client = new Redis(redis.server.port, '127.0.0.1', { maxRetriesPerRequest: 0 });
      clients.push(client);
      const store = createRedisStore({ client, prefix, logger: quiet, localFirst: { syncIntervalMs: 60_000 } });
      stores.push(store);
      return store;
    };

    afterEach(async () => {
      for (const store of stores.splice(0)) await store.localFirst?.close().catch(() => {});
      for (const client of clients.splice(0)) client.disconnect();
      await redis.admin.flushall();
    });

    it('writes the counts of the 10 clients touched out of 100,000 known, and reads the fleet back for them', async () => {
      const clock = manualClock(START);
      const options = { limit: 100, window: '1h', algorithm: 'fixed-window', clock, prefix: 't' } as const;
      const store = open('a:');
      const limiter = createLimiter({ ...options, store });
      const keys = Array.from({ length: 100_000 }, (_, i) => `c${i}`);
      await Promise.all(keys.map((key) => limiter.consume(key)));
      await store.localFirst?.sync();
      // Another process charges one of them.
      const other = open('a:');
      expect((await createLimiter({ ...options, store: other }).consume('c5', { cost: 3 })).allowed).toBe(true);
      await other.localFirst?.sync();

      const touched = ['c5', ...Array.from({ length: 9 }, (_, i) => `c${1000 + i * 7919}`)];
      for (const key of touched) await limiter.consume(key);
      await redis.admin.config('RESETSTAT');
      await store.localFirst?.sync();
      // One script call: EVAL where it is the first of its key count on the connection.
      expect((await calls(redis.admin, 'evalsha')) + (await calls(redis.admin, 'eval'))).toBe(1);
      expect(await calls(redis.admin, 'hset')).toBe(10);
      expect(await calls(redis.admin, 'hvals')).toBe(10);
      // c5 still decides here, on the other process's 3 as well: 2 + 3 counted, this is the 6th.
      expect(await limiter.consume('c5')).toMatchObject({ allowed: true, remaining: 94 });
    }, 30_000);

    // \`sync()\` gave back the sync under way, which took its clients before the decisions made
    // since: it resolved with them unwritten.
    it('writes, when asked to sync while a sync is under way, the decisions made after that one began', async () => {
      const clock = manualClock(START);
      const store = open('c:');
      const limiter = createLimiter({ limit: 100, window: '1m', algorithm: 'fixed-window', store, clock, prefix: 't' });
      await limiter.consume('k');
      const underWay = store.localFirst?.sync();
      for (let i = 0; i < 4; i++) await limiter.consume('k');
      await store.localFirst?.sync();
      await underWay;
      const window = Math.floor(clock() / WINDOW_MS);
      expect(await redis.admin.hvals(`c:lf:{t|k}:_0@${WINDOW_MS}:${window}`)).toEqual(['5']);
    }, 30_000);

    it('forgets the clients whose windows are over, more than one sync forgets at once included', async () => {
      const clock = manualClock(START);
      const store = open('b:');
      const limiter = createLimiter({ limit: 10, window: '1m', algorithm: 'fixed-window', store, clock, prefix: 't' });
      const keys = Array.from({ length: 3000 }, (_, i) => `c${i}`);
      const first = Math.floor(clock() / WINDOW_MS);
      await Promise.all(keys.map((key) => limiter.consume(key)));
      await store.localFirst?.sync();
      const before = await fieldsOf(redis.admin, 'b:', keys, first);

      // Two windows on, the first is read by no one: each sync forgets a slice of its clients.
      clock.advance(2 * WINDOW_MS);
      for (let sync = 0; sync < 4; sync++) {
        await limiter.consume('someone-else');
        await store.localFirst?.sync();
      }
      await Promise.all(keys.map((key) => limiter.consume(key)));
      await store.localFirst?.sync();
      // Met afresh, each counts in a field of its own: none was still kept.
      const after = await fieldsOf(redis.admin, 'b:', keys, first + 2);
      expect(after.every((fields, i) => fields.length === 1 && fields[0] !== before[i]?.[0])).toBe(true);
    }, 30_000);
  },
);
