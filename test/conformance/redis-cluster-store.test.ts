import { randomUUID } from 'node:crypto';
import { createLimiter } from '@sluice/core';
import { createRedisStore, type RedisStore } from '@sluice/redis';
import type { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clusterTarget, connectCluster, type RedisClusterHandle } from '../helpers/redis-cluster.js';
import { deleteKeys, escapeGlob } from '../helpers/redis-env.js';
import { limiterRegressions } from './limiter-regressions.js';
import { storeConformance } from './store-conformance.js';

const target = clusterTarget();

describe.skipIf(target.skip)('Redis Cluster store conformance (3 masters, 3 replicas, auto-pipelining)', () => {
  const prefix = `sluice-test:${randomUUID()}:`;
  let handle: RedisClusterHandle | undefined;
  let cluster: Cluster | undefined;
  let store: RedisStore | undefined;

  beforeAll(async () => {
    handle = await target.require()();
    cluster = await connectCluster(handle.nodes, { enableAutoPipelining: true });
    store = createRedisStore({ client: cluster, prefix });
  }, 120_000);

  afterAll(async () => {
    if (cluster !== undefined) {
      await Promise.all(cluster.nodes('master').map((node) => deleteKeys(node, prefix)));
      cluster.disconnect();
    }
    await handle?.stop();
  });

  it('runs on three masters, each with a replica', async () => {
    const nodes = ((await (cluster as Cluster).cluster('NODES')) as string).trim().split('\n');
    const flags = nodes.map((line) => line.split(' ')[2] as string);
    expect(flags.filter((f) => f.includes('master')).length).toBe(3);
    expect(flags.filter((f) => f.includes('slave')).length).toBe(3);
  });

  storeConformance(() => store as RedisStore);
  limiterRegressions(() => store as RedisStore);

  it('spreads clients over every master while each decision, and each batch, stays in one slot', async () => {
    const c = cluster as Cluster;
    const limiter = createLimiter({
      policies: [
        { name: 'second', limit: 5, window: '1s', algorithm: 'gcra' },
        { name: 'hour', limit: 100, window: '1h', algorithm: 'sliding-window-log' },
        { name: 'day', limit: 1000, window: '1d', algorithm: 'fixed-window' },
      ],
      store: store as RedisStore,
      prefix: 'spread',
    });
    // Asked in one tick, so the store must split its batches by slot: a call spanning two fails.
    const decisions = await Promise.all(Array.from({ length: 60 }, (_, i) => limiter.consume(`client-${i}`)));
    for (const decision of decisions) expect(decision.reason).toBeUndefined();
    const perMaster = await Promise.all(
      c.nodes('master').map(async (node) => node.keys(`${escapeGlob(`${prefix}{spread|`)}*`)),
    );
    for (const keys of perMaster) expect(keys.length).toBeGreaterThan(0);
    const all = perMaster.flat();
    // Per client its state key and its log's key.
    expect(all.length).toBe(120);
    const slots = new Map<string, Set<number>>();
    for (const key of all) {
      const client = key.slice(key.indexOf('{'), key.indexOf('}') + 1);
      const slot = (await c.cluster('KEYSLOT', key)) as number;
      slots.set(client, (slots.get(client) ?? new Set()).add(slot));
    }
    expect(slots.size).toBe(60);
    for (const set of slots.values()) expect(set.size).toBe(1);
  });
});
