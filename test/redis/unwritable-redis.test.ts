import { createLimiter } from '@sluice/core';
import { createRedisStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_ALGORITHMS } from '../helpers/algorithms.js';
import { redisTarget } from '../helpers/redis-env.js';
import { hasRedisServer, type RedisServer, startRedisServer } from '../helpers/redis-server.js';
import { privateRedis } from './private-redis.js';

const target = redisTarget('redis-server', hasRedisServer() || undefined, 'redis-server is not installed');

const quiet = { warn() {} };
const clientOf = (port: number) => {
  const client = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 0 });
  client.on('error', () => {});
  return client;
};

// Regression: a sliding log's script deleted a new client's list before deciding, a write of
// nothing. Redis checks a script's memory limit at its first write alone, so on a full Redis
// under `noeviction` new clients were decided and charged past the limit (under 'deny' a full
// Redis refused the clients it knew and let new ones in), and a peek wrote, which a replica refuses.
describe.skipIf(target.skip)('Redis store on a Redis that cannot take writes', () => {
  const redis = privateRedis();

  it.each(ALL_ALGORITHMS)(
    '%s: a new client of a full Redis gets the fail policy, and nothing is written',
    async (algorithm) => {
      const client = clientOf(redis.server.port);
      try {
        await redis.admin.config('SET', 'maxmemory', '1');
        await redis.admin.config('SET', 'maxmemory-policy', 'noeviction');
        const store = createRedisStore({ client, prefix: `full-${algorithm}`, logger: quiet });
        const limiter = createLimiter({
          limit: 5,
          window: '1m',
          algorithm,
          store,
          onStoreError: 'deny',
          logger: quiet,
        });
        const keysBefore = await redis.admin.dbsize();
        const decisions = [];
        for (let i = 0; i < 3; i++) decisions.push(await limiter.consume(`new-${i}`));
        expect(decisions.map((d) => [d.allowed, d.reason])).toEqual(Array(3).fill([false, 'store-unavailable']));
        expect(await redis.admin.dbsize()).toBe(keysBefore);
      } finally {
        await redis.admin.config('SET', 'maxmemory', '0');
        client.disconnect();
      }
    },
  );

  describe('a read-only replica', () => {
    let replica: RedisServer;
    beforeAll(async () => {
      replica = await startRedisServer(['--replicaof', '127.0.0.1', String(redis.server.port)]);
    });
    afterAll(() => replica?.stop());

    it.each(ALL_ALGORITHMS)('%s: answers a peek of a new client, which writes nothing', async (algorithm) => {
      const client = clientOf(replica.port);
      try {
        const store = createRedisStore({ client, prefix: `replica-${algorithm}`, logger: quiet });
        const limiter = createLimiter({
          limit: 5,
          window: '1m',
          algorithm,
          store,
          onStoreError: 'throw',
          logger: quiet,
        });
        expect(await limiter.peek('new')).toMatchObject({ allowed: true, remaining: 5 });
      } finally {
        client.disconnect();
      }
    });
  });
});
