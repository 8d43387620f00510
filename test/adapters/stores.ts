import { randomUUID } from 'node:crypto';
import type { RateLimitStore } from '@sluice/core';
import { createMemoryStore } from '@sluice/memory';
import { createRedisStore } from '@sluice/redis';
import type { Redis } from 'ioredis';
import { connectRedis, deleteKeys, standaloneRedis } from '../helpers/redis-env.js';
import { type Harness, harnesses } from './harness/index.js';

export interface StoreCase {
  name: 'memory' | 'redis';
  /** A fresh store; on Redis, under a prefix of its own. */
  create(): RateLimitStore;
}

/**
 * The stores the HTTP cases run on: memory always, and a real Redis when one answers (under
 * `CI=true`, when none does the suite fails instead of skipping). Call `close` in `afterAll`.
 */
async function adapterStores(): Promise<{ cases: StoreCase[]; close(): Promise<void> }> {
  const memory: StoreCase = { name: 'memory', create: () => createMemoryStore() };
  const target = await standaloneRedis();
  if (target.skip) return { cases: [memory], close: async () => {} };
  const client: Redis = await connectRedis(target.require());
  const prefix = `sluice-http-test:${randomUUID()}:`;
  let n = 0;
  const redis: StoreCase = { name: 'redis', create: () => createRedisStore({ client, prefix: `${prefix}${n++}:` }) };
  return {
    cases: [memory, redis],
    async close() {
      await deleteKeys(client, prefix);
      client.disconnect();
    },
  };
}

/** Every adapter on every store: the cases of a conformance file, named `<framework> on <store>`. */
export async function adapterCases(): Promise<{
  cases: { harness: Harness; store: StoreCase; name: string }[];
  close(): Promise<void>;
}> {
  const stores = await adapterStores();
  const cases = harnesses.flatMap((harness) =>
    stores.cases.map((store) => ({ harness, store, name: `${harness.name} on ${store.name}` })),
  );
  return { cases, close: stores.close };
}
