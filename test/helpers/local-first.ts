import type { Limiter, Logger } from '@sluice/core';
import { createRedisStore, type RedisStore } from '@sluice/redis';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { connectRedis, deleteKeys, type RedisTarget } from './redis-env.js';

const quiet: Logger = { warn() {} };

/** Units admitted out of `tries` single requests. */
export async function admitted(limiter: Limiter, key: string, tries: number): Promise<number> {
  let passed = 0;
  for (let i = 0; i < tries; i++) if ((await limiter.consume(key)).allowed) passed++;
  return passed;
}

/** App processes sharing one Redis under one prefix, and an admin connection to inspect it. */
export interface LocalFirstFleet {
  /** Connected once the suite's `beforeAll` has run. */
  readonly admin: Redis;
  /** One app process: its own connection and its own store (the sync timer never fires in a test). */
  appProcess(): Promise<RedisStore>;
}

/**
 * Call inside a `describe`: connects the admin before the suite, and after it closes every
 * process's store and connection and deletes the keys under `prefix`.
 */
export function localFirstFleetForSuite(target: RedisTarget<string>, prefix: string): LocalFirstFleet {
  const clients: Redis[] = [];
  const stores: RedisStore[] = [];
  let admin: Redis | undefined;

  beforeAll(async () => {
    admin = await connectRedis(target.require());
  });
  afterAll(async () => {
    for (const store of stores) await store.localFirst?.close().catch(() => {});
    for (const client of clients) client.disconnect();
    if (admin === undefined) return;
    await deleteKeys(admin, prefix);
    admin.disconnect();
  });

  return {
    get admin() {
      if (admin === undefined) throw new Error('the admin connection opens in beforeAll: use it inside a test');
      return admin;
    },
    async appProcess() {
      const client = await connectRedis(target.require());
      clients.push(client);
      const store = createRedisStore({ client, prefix, logger: quiet, localFirst: { syncIntervalMs: 60_000 } });
      stores.push(store);
      return store;
    },
  };
}
