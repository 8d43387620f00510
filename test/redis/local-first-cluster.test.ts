import { randomUUID } from 'node:crypto';
import { createLimiter, type Logger } from '@sluice/core';
import { createRedisStore, type RedisStore } from '@sluice/redis';
import type { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../helpers/clock.js';
import { clusterTarget, connectCluster, type RedisClusterHandle } from '../helpers/redis-cluster.js';
import { deleteKeys } from '../helpers/redis-env.js';

const target = clusterTarget();
const quiet: Logger = { warn() {} };

/** Units admitted out of `tries` single requests. */
async function admitted(limiter: ReturnType<typeof createLimiter>, key: string, tries: number): Promise<number> {
  let passed = 0;
  for (let i = 0; i < tries; i++) if ((await limiter.consume(key)).allowed) passed++;
  return passed;
}

describe.skipIf(target.skip)('Redis store, local-first mode, on a Redis Cluster', () => {
  const prefix = `sluice-lf:${randomUUID()}:`;
  let handle: RedisClusterHandle | undefined;
  const clusters: Cluster[] = [];
  const stores: RedisStore[] = [];

  beforeAll(async () => {
    handle = await target.require()();
    for (let i = 0; i < 2; i++) {
      // The first as the README's Cluster example makes it: ioredis then pipelines calls made
      // in one tick by the node it routes each to.
      const cluster = await connectCluster(handle.nodes, { enableAutoPipelining: i === 0 });
      clusters.push(cluster);
      stores.push(createRedisStore({ client: cluster, prefix, logger: quiet, localFirst: { syncIntervalMs: 60_000 } }));
    }
  }, 120_000);

  afterAll(async () => {
    for (const store of stores) await store.localFirst?.close().catch(() => {});
    const [first] = clusters;
    if (first !== undefined) await Promise.all(first.nodes('master').map((node) => deleteKeys(node, prefix)));
    for (const cluster of clusters) cluster.disconnect();
    await handle?.stop();
  });

  it('syncs clients spread over every master, one call per slot, and both processes see the sum', async () => {
    const clock = manualClock(1_700_000_040_000);
    const options = { limit: 5, window: '1m', algorithm: 'sliding-window-counter', clock, prefix: 'spread' } as const;
    const [a, b] = stores as [RedisStore, RedisStore];
    const onA = createLimiter({ ...options, store: a });
    const onB = createLimiter({ ...options, store: b });
    const keys = Array.from({ length: 40 }, (_, i) => `client-${i}`);
    const [cluster] = clusters as [Cluster];
    const slots = await Promise.all(keys.map((key) => cluster.cluster('KEYSLOT', `{spread|${key}}`)));
    expect(new Set(slots).size).toBeGreaterThan(30);

    for (const key of keys) for (let i = 0; i < 3; i++) expect((await onA.consume(key)).allowed).toBe(true);
    for (const key of keys) for (let i = 0; i < 3; i++) expect((await onB.consume(key)).allowed).toBe(true);
    await a.localFirst?.sync();
    await b.localFirst?.sync();
    const window = Math.floor(clock() / 60_000);
    for (const key of keys) {
      const hash = await cluster.hgetall(`${prefix}lf:{spread|${key}}:_0@${onA.policies[0]?.windowMs}:${window}`);
      expect(Object.values(hash).map(Number).sort()).toEqual([3, 3]);
    }
    // A was idle through B's sync: it reads again before deciding, and finds 6 of 5 spent.
    clock.advance(1);
    await a.localFirst?.sync();
    for (const key of keys) expect((await onA.consume(key)).allowed).toBe(false);
  });

  it('two policies per client: a late process reads the fleet first, refunds and resets reach every master', async () => {
    const clock = manualClock(1_700_000_040_000);
    const policies = [
      { name: 'burst', limit: 3, window: '1m', algorithm: 'fixed-window' },
      { name: 'minute', limit: 10, window: '1m', algorithm: 'sliding-window-counter' },
    ] as const;
    const [a, b] = stores as [RedisStore, RedisStore];
    const onA = createLimiter({ policies, clock, prefix: 'two', store: a });
    const onB = createLimiter({ policies, clock, prefix: 'two', store: b });
    const keys = Array.from({ length: 20 }, (_, i) => `client-${i}`);
    const [cluster] = clusters as [Cluster];
    const window = Math.floor(clock() / 60_000);
    const windowKeys = (key: string) =>
      onA.policies.map((policy) => `${prefix}lf:{two|${key}}:${policy.slot}@${policy.windowMs}:${window}`);

    for (const key of keys) expect(await admitted(onA, key, 3)).toBe(3);
    await a.localFirst?.sync();
    // B has not decided on these clients: its first request reads A's counts, and `burst` refuses.
    for (const key of keys) expect(await onB.consume(key)).toMatchObject({ allowed: false, remaining: 0 });

    for (const key of keys) await onA.refund(key, 1);
    await a.localFirst?.sync();
    await b.localFirst?.sync();
    for (const key of keys) expect(await admitted(onB, key, 2)).toBe(1);
    await b.localFirst?.sync();
    for (const key of keys) {
      const counts = await Promise.all(windowKeys(key).map((name) => cluster.hgetall(name)));
      expect(counts.map((hash) => Object.values(hash).map(Number).sort())).toEqual([
        [1, 2],
        [1, 2],
      ]);
    }

    // A reset deletes both policies' windows in one call (one slot per client).
    for (const key of keys) await onB.reset(key);
    for (const key of keys) {
      expect(await Promise.all(windowKeys(key).map((name) => cluster.exists(name)))).toEqual([0, 0]);
      expect(await admitted(onB, key, 4)).toBe(3);
    }
  });
});
