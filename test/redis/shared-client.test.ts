import { randomUUID } from 'node:crypto';
import { createLimiter } from '@sluice/core';
import { createRedisStore } from '@sluice/redis';
import type { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clusterTarget, connectCluster, type RedisClusterHandle } from '../helpers/redis-cluster.js';
import { connectRedis, deleteKeys, standaloneRedis } from '../helpers/redis-env.js';

const standalone = await standaloneRedis();
const cluster = clusterTarget();
const NOW = 1_700_000_000_000;

/** What used to go wrong on one client, checked on a standalone Redis and on a Cluster. */
function onOneClient(
  connect: () => Promise<Redis | Cluster>,
  cleanUp: (client: Redis | Cluster, prefix: string) => Promise<void>,
) {
  const prefix = `sluice-test:${randomUUID()}:`;
  let client: Redis | Cluster;

  beforeAll(async () => {
    client = await connect();
  }, 120_000);
  afterAll(async () => {
    if (client === undefined) return;
    await cleanUp(client, prefix);
    client.disconnect();
  });

  it('two store objects on one client double-counted: the second limiter is now an error naming prefix', async () => {
    const options = { limit: 3, window: '1m', clock: () => NOW } as const;
    createLimiter({ ...options, store: createRedisStore({ client, prefix }) });
    expect(() => createLimiter({ ...options, store: createRedisStore({ client, prefix }) })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_NAMESPACE_TAKEN', message: expect.stringContaining('`prefix`') }),
    );
    // Each given its own prefix, they count apart: one request spends 1 in each.
    const global = createLimiter({ ...options, store: createRedisStore({ client, prefix }), prefix: 'global' });
    const route = createLimiter({ ...options, store: createRedisStore({ client, prefix }), prefix: 'route' });
    await global.consume('ip');
    expect((await route.consume('ip')).remaining).toBe(2);
    expect((await global.peek('ip')).remaining).toBe(2);
  });

  it('stores under different Redis prefixes on one client keep apart, so they may share a derived namespace', () => {
    const options = { limit: 4, window: '1m', clock: () => NOW } as const;
    createLimiter({ ...options, store: createRedisStore({ client, prefix: `${prefix}a:` }) });
    expect(() =>
      createLimiter({ ...options, store: createRedisStore({ client, prefix: `${prefix}b:` }) }),
    ).not.toThrow();
  });

  it('an exact and a local-first store on one client and prefix write different keys, so they claim apart (one refused the other)', async () => {
    const options = { limit: 5, window: '1m', clock: () => NOW } as const;
    const exact = createLimiter({ ...options, store: createRedisStore({ client, prefix: `${prefix}modes:` }) });
    const localStore = createRedisStore({ client, prefix: `${prefix}modes:`, localFirst: { syncIntervalMs: 60_000 } });
    try {
      const local = createLimiter({ ...options, store: localStore });
      await exact.consume('ip');
      expect((await local.consume('ip')).remaining).toBe(4);
    } finally {
      await localStore.localFirst?.close();
    }
  });

  it('17 policies used to fail at every decision (and fail open): now refused at construction', () => {
    const policies = Array.from({ length: 17 }, (_, i) => ({ name: `p${i}`, limit: 10, window: '1m' as const }));
    expect(() => createLimiter({ policies, store: createRedisStore({ client, prefix }), prefix: 'many' })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_POLICIES', message: expect.stringContaining('17') }),
    );
  });

  it('a clock returning fractional ms used to fail open at every decision: now refused at construction', () => {
    expect(() =>
      createLimiter({ limit: 3, window: '1m', clock: () => NOW + 0.5, store: createRedisStore({ client, prefix }) }),
    ).toThrow(expect.objectContaining({ code: 'ERR_SLUICE_INVALID_CLOCK' }));
  });
}

describe.skipIf(standalone.skip)('one standalone Redis client shared by several stores', () => {
  onOneClient(
    () => connectRedis(standalone.require()),
    (client, prefix) => deleteKeys(client as Redis, prefix),
  );
});

describe.skipIf(cluster.skip)('one Redis Cluster client shared by several stores', () => {
  let handle: RedisClusterHandle | undefined;
  onOneClient(
    async () => {
      handle = await cluster.require()();
      return connectCluster(handle.nodes);
    },
    async (client, prefix) => {
      await Promise.all((client as Cluster).nodes('master').map((node) => deleteKeys(node, prefix)));
      await handle?.stop();
    },
  );
});
