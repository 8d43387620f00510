import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { createLimiter } from '@sluice/core';
import { clientSlot, createRedisStore } from '@sluice/redis';
import type { Cluster } from 'ioredis';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectCluster, type RedisClusterHandle, startMastersCluster } from '../helpers/redis-cluster.js';
import { isCi } from '../helpers/redis-env.js';
import { hasRedisServer } from '../helpers/redis-server.js';

const skip = !hasRedisServer() && !isCi;
const LIMIT = 1_000_000;

/** The ids of the cluster's masters, in the order `CLUSTER NODES` lists them. */
async function masterIds(port: number): Promise<string[]> {
  const node = new Redis(port, '127.0.0.1', { lazyConnect: true });
  try {
    const lines = ((await node.cluster('NODES')) as string).trim().split('\n');
    return lines.filter((line) => line.includes('master')).map((line) => line.split(' ')[0] as string);
  } finally {
    node.disconnect();
  }
}

// A cluster of its own: a thousand of its slots move from one master to another here.
describe.skipIf(skip)('a Redis Cluster resharded under traffic', () => {
  let handle: RedisClusterHandle;
  let client: Cluster;

  beforeAll(async () => {
    handle = await startMastersCluster();
    // As the store's README sets a Cluster client up: no auto-pipelining (WRN_SLUICE_CLUSTER_AUTO_PIPELINING).
    client = await connectCluster(handle.nodes, { slotsRefreshInterval: 1000 });
  }, 120_000);

  afterAll(async () => {
    client?.disconnect();
    await handle?.stop();
  });

  it('fails no decision and counts each admitted one once, while slots migrate (MOVED and ASK are followed)', async () => {
    const limiter = createLimiter({
      policies: [
        { name: 'count', limit: LIMIT, window: '1h', algorithm: 'fixed-window' },
        { name: 'log', limit: LIMIT, window: '1h', algorithm: 'sliding-window-log' },
      ],
      store: createRedisStore({ client, prefix: 'reshard:' }),
      prefix: 'moving',
      onStoreError: 'deny',
      storeTimeoutMs: 2000,
    });
    const keys = Array.from({ length: 200 }, (_, i) => `client-${i}`);
    const admitted = new Map<string, number>();
    let failed = 0;
    let moving = true;
    const worker = async (start: number) => {
      // Bounded by count as well as by the reshard: the test stops by itself.
      for (let i = start; moving && i < start + 20_000; i++) {
        const key = keys[i % keys.length] as string;
        const decision = await limiter.consume(key);
        if (decision.reason !== undefined) failed++;
        else if (decision.allowed) admitted.set(key, (admitted.get(key) ?? 0) + 1);
      }
    };
    const workers = Array.from({ length: 32 }, (_, w) => worker(w * 7));
    const [from, to] = await masterIds(handle.nodes[0]?.port as number);
    const entry = `127.0.0.1:${handle.nodes[0]?.port}`;
    const slots = ['--cluster-from', from as string, '--cluster-to', to as string, '--cluster-slots', '1000'];
    await promisify(execFile)('redis-cli', ['--cluster', 'reshard', entry, ...slots, '--cluster-yes'], {
      timeout: 60_000,
    });
    moving = false;
    await Promise.all(workers);
    expect(failed).toBe(0);
    expect(admitted.size).toBe(keys.length);
    for (const key of keys) {
      const left = await limiter.peek(key);
      expect([key, LIMIT - left.remaining]).toEqual([key, admitted.get(key)]);
    }
  }, 90_000);

  // Keys move a few at a time: while a slot migrates, a call carrying clients whose keys are now
  // split between two masters is refused with TRYAGAIN (it did not run). ioredis sent it again
  // after 100 ms by default, past the store's timeout: every such request was refused under
  // 'deny' and charged all the same (383–417 a run of 48 callers).
  it('charges no request the fail policy answered while a slot migrates key by key', async () => {
    const prefix = 'keybykey';
    const limiter = createLimiter({
      limit: LIMIT,
      window: '1h',
      algorithm: 'fixed-window',
      store: createRedisStore({ client, prefix: 'migrate:' }),
      prefix,
      onStoreError: 'deny',
    });
    const slots = [0, 1, 2, 3];
    const keys: string[] = [];
    for (let i = 0; keys.length < 200; i++) if (slots.includes(clientSlot(prefix, `c${i}`))) keys.push(`c${i}`);
    const admitted = new Map<string, number>();
    let migrating = true;
    const worker = async (start: number) => {
      for (let i = start; migrating && i < start + 50_000; i += 7) {
        const key = keys[i % keys.length] as string;
        const decision = await limiter.consume(key);
        if (decision.allowed) admitted.set(key, (admitted.get(key) ?? 0) + 1);
      }
    };
    const workers = Array.from({ length: 48 }, (_, w) => worker(w));
    try {
      await new Promise((resolve) => setTimeout(resolve, 300));
      await migrateKeyByKey(
        handle.nodes.map((node) => node.port),
        slots,
      );
    } finally {
      migrating = false;
      await Promise.all(workers);
    }
    for (const key of keys) {
      const left = await limiter.peek(key);
      expect([key, LIMIT - left.remaining]).toEqual([key, admitted.get(key) ?? 0]);
    }
  }, 90_000);
});

/** Moves `slots` to another master five keys at a time, 20 ms apart, as a slow reshard does. */
async function migrateKeyByKey(ports: number[], slots: number[]): Promise<void> {
  const nodes = ports.map((port) => new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 0 }));
  try {
    const first = slots[0] as number;
    const ranges = (await nodes[0]?.cluster('SLOTS')) ?? [];
    const ownerPort = ranges.find(([from, to]) => first >= from && first <= to)?.[2]?.[1];
    const source = nodes.find((node) => node.options.port === ownerPort) as Redis;
    const target = nodes.find((node) => node !== source) as Redis;
    const [sourceId, targetId] = [String(await source.cluster('MYID')), String(await target.cluster('MYID'))];
    for (const slot of slots) {
      await target.cluster('SETSLOT', slot, 'IMPORTING', sourceId);
      await source.cluster('SETSLOT', slot, 'MIGRATING', targetId);
      for (;;) {
        const moving = (await source.cluster('GETKEYSINSLOT', slot, 5)) as string[];
        if (moving.length === 0) break;
        await source.migrate('127.0.0.1', target.options.port as number, '', 0, 5000, 'KEYS', ...moving);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      for (const node of nodes) await node.cluster('SETSLOT', slot, 'NODE', targetId);
    }
  } finally {
    for (const node of nodes) node.disconnect();
  }
}
