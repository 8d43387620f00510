import { randomUUID } from 'node:crypto';
import { createRedisStore, type RedisStore } from '@sluice/redis';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe } from 'vitest';
import { connectRedis, deleteKeys, standaloneRedis } from '../helpers/redis-env.js';
import { limiterRegressions } from './limiter-regressions.js';
import { storeConformance } from './store-conformance.js';

const target = await standaloneRedis();

describe.skipIf(target.skip)('Redis store conformance (auto-pipelining)', () => {
  const prefix = `sluice-test:${randomUUID()}:`;
  let client: Redis | undefined;
  let store: RedisStore | undefined;

  beforeAll(async () => {
    client = await connectRedis(target.require(), { enableAutoPipelining: true });
    store = createRedisStore({ client, prefix });
  });

  afterAll(async () => {
    if (client === undefined) return;
    await deleteKeys(client, prefix);
    client.disconnect();
  });

  storeConformance(() => store as RedisStore);
  limiterRegressions(() => store as RedisStore);
});
