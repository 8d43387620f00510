import { randomUUID } from 'node:crypto';
import { type StoreRequest, toPolicy } from '@sluice/core';
import { createRedisStore, type RedisStore } from '@sluice/redis';
import type { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clusterTarget, connectCluster, type RedisClusterHandle } from '../helpers/redis-cluster.js';
import { connectRedis, deleteKeys, standaloneRedis } from '../helpers/redis-env.js';

const NOW = 1_700_000_000_000;
const standalone = await standaloneRedis();
const cluster = clusterTarget();

const log = toPolicy({ name: 'log', limit: 2, window: '1m', algorithm: 'sliding-window-log' }, 'policies[0]');
const count = toPolicy({ name: 'count', limit: 5, window: '1m', algorithm: 'fixed-window' }, 'policies[1]');
const bucket = toPolicy({ name: 'bucket', limit: 1, window: '1m', algorithm: 'token-bucket' }, 'policies[0]');
const ask = (namespace: string, policies: StoreRequest['policies'], cost = 1): StoreRequest => ({
  namespace,
  key: 'client',
  policies,
  capacities: policies.map((p) => p.capacity),
  cost,
  now: NOW,
});
const remaining = (replies: { outcomes: { remaining: number }[] }[] | undefined) =>
  replies?.map((r) => r.outcomes.map((o) => o.remaining));

describe.skipIf(standalone.skip)('Redis store consumeAll on a standalone Redis', () => {
  const prefix = `sluice-test:${randomUUID()}:`;
  let client: Redis;
  let store: RedisStore;
  beforeAll(async () => {
    client = await connectRedis(standalone.require());
    store = createRedisStore({ client, prefix });
  });
  afterAll(async () => {
    if (client === undefined) return;
    await deleteKeys(client, prefix);
    client.disconnect();
  });

  it('charges every request when all allow, and none when one refuses, a sliding log included', async () => {
    const logged = ask('logged', [log, count]);
    const bucketed = ask('bucketed', [bucket]);
    const first = await store.consumeAll?.([logged, bucketed]);
    expect(first?.map((r) => r.allowed)).toEqual([true, true]);
    expect(remaining(first)).toEqual([[1, 4], [0]]);
    // The bucket is empty: the logged request would pass, but is not charged.
    const second = await store.consumeAll?.([logged, bucketed]);
    expect(second?.map((r) => r.allowed)).toEqual([true, false]);
    expect(remaining(second)).toEqual([[1, 4], [0]]);
    const asIs = await store.consume(ask('logged', [log, count], 0));
    expect(asIs.outcomes.map((o) => o.remaining)).toEqual([1, 4]);
    expect(await client.llen(`${prefix}{logged|client}:log`)).toBe(2);
  });

  // The deny cache keeps a refusal while nothing but time can change it: a charge made by
  // consumeAll changes it, as a consume's does.
  it('a charge makes the deny cache forget the refusal it held for that client', async () => {
    const window = toPolicy({ name: 'window', limit: 3, window: '1m', algorithm: 'fixed-window' }, 'policies[0]');
    expect((await store.consume(ask('cached', [window]))).allowed).toBe(true);
    const refused = await store.consume(ask('cached', [window], 3));
    expect(refused.outcomes[0]?.remaining).toBe(2);
    expect((await store.consumeAll?.([ask('cached', [window], 2)]))?.[0]?.allowed).toBe(true);
    const again = await store.consume(ask('cached', [window], 3));
    expect(again).toMatchObject({ allowed: false, outcomes: [{ remaining: 0 }] });
  });

  // The script reads a client's state once per call: two requests on one client would both
  // be decided on the state before either charge, admitting twice on a quota of one.
  // Regression: consume waits in the store's batch for the next turn and consumeAll was sent at
  // once, so a consumeAll asked second took the quota of a consume asked first.
  it('goes after the consumes asked before it', async () => {
    const first = store.consume(ask('ordered', [bucket]));
    const second = store.consumeAll?.([ask('ordered', [bucket])]);
    expect([(await first).allowed, (await second)?.[0]?.allowed]).toEqual([true, false]);
  });

  it('declines two requests on one client, which the caller then decides one by one', async () => {
    const twice = ask('twice', [bucket]);
    expect(store.consumeAll?.([twice, twice])).toBeUndefined();
    expect((await store.consume(twice)).allowed).toBe(true);
    expect((await store.consume(twice)).allowed).toBe(false);
  });
});

describe.skipIf(cluster.skip)('Redis store consumeAll on a Redis Cluster', () => {
  const prefix = `sluice-test:${randomUUID()}:`;
  let handle: RedisClusterHandle | undefined;
  let client: Cluster;
  let store: RedisStore;
  beforeAll(async () => {
    handle = await cluster.require()();
    client = await connectCluster(handle.nodes);
    store = createRedisStore({ client, prefix });
  }, 120_000);
  afterAll(async () => {
    if (client !== undefined) await Promise.all(client.nodes('master').map((node) => deleteKeys(node, prefix)));
    client?.disconnect();
    await handle?.stop();
  });

  it('decides requests whose keys share a slot in one call, and declines those that do not', async () => {
    const names = Array.from({ length: 40_000 }, (_, i) => `ns-${i}`);
    const pipeline = client.pipeline();
    for (const name of names) pipeline.cluster('KEYSLOT', `${prefix}{${name}|client}`);
    const slots = ((await pipeline.exec()) ?? []).map(([, slot]) => slot);
    const partner = names.find((_, i) => i > 0 && slots[i] === slots[0]) as string;
    const apart = names.find((_, i) => slots[i] !== slots[0]) as string;
    expect(store.consumeAll?.([ask('ns-0', [bucket]), ask(apart, [bucket])])).toBeUndefined();
    const together = await store.consumeAll?.([ask('ns-0', [bucket]), ask(partner, [count])]);
    expect(remaining(together)).toEqual([[0], [4]]);
    const refused = await store.consumeAll?.([ask('ns-0', [bucket]), ask(partner, [count])]);
    expect(refused?.map((r) => r.allowed)).toEqual([false, true]);
    expect(remaining(refused)).toEqual([[0], [4]]);
  });
});
