import { randomUUID } from 'node:crypto';
import { createLimiter, type Limiter } from '@sluice/core';
import { clientSlot, createRedisStore, type RedisStore } from '@sluice/redis';
import { type Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../helpers/clock.js';
import { connectCluster, type RedisClusterHandle, startMastersCluster } from '../helpers/redis-cluster.js';
import { redisTarget } from '../helpers/redis-env.js';
import { type RedisProxy, startRedisProxy } from '../helpers/redis-proxy.js';
import { hasRedisServer, waitFor } from '../helpers/redis-server.js';

const target = redisTarget('redis-server', hasRedisServer() || undefined, 'redis-server is not installed');
const WINDOW_MS = 60_000;
const START = 1_700_000_040_000 - (1_700_000_040_000 % WINDOW_MS) + 1000;
/** A first read's call's bound at a 250 ms interval (4 × T). */
const BOUND_MS = 1000;

// Each master behind a proxy that can slow it down; the client reaches them through it (natMap).
describe.skipIf(target.skip)('Redis store, local-first mode: first reads on a cluster with a slow master', () => {
  let handle: RedisClusterHandle | undefined;
  const proxies: RedisProxy[] = [];
  const admins: Redis[] = [];
  const clusters: Cluster[] = [];

  beforeAll(async () => {
    handle = await startMastersCluster();
    for (const node of handle.nodes) {
      proxies.push(await startRedisProxy(node.port));
      admins.push(new Redis(node.port, '127.0.0.1', { maxRetriesPerRequest: 0 }));
    }
  }, 60_000);
  afterAll(async () => {
    for (const cluster of clusters) cluster.disconnect();
    for (const admin of admins) admin.disconnect();
    for (const proxy of proxies) await proxy.close();
    await handle?.stop();
  });

  /** The index (in `handle.nodes`) of the master serving `slot`. */
  const masterOf = async (slot: number): Promise<number> => {
    const ranges = (await admins[0]?.cluster('SLOTS')) as unknown as [number, number, [string, number]][];
    const [, , [, port]] = ranges.find(([from, to]) => slot >= from && slot <= to) as [
      number,
      number,
      [string, number],
    ];
    return handle?.nodes.findIndex((node) => node.port === port) ?? -1;
  };

  /** `count` client keys of limiter `s` whose slots are all apart, on master `master` (or off it). */
  const clientsOn = async (master: number, on: boolean, count: number, taken: Set<number>, tag: string) => {
    const keys: string[] = [];
    for (let i = 0; keys.length < count; i++) {
      const key = `${tag}-${i}`;
      const slot = clientSlot('s', key);
      if (taken.has(slot) || ((await masterOf(slot)) === master) !== on) continue;
      taken.add(slot);
      keys.push(key);
    }
    return keys;
  };

  const open = async (warnings: string[]): Promise<RedisStore> => {
    const natMap = Object.fromEntries(
      (handle?.nodes ?? []).map((node, i) => [
        `127.0.0.1:${node.port}`,
        { host: '127.0.0.1', port: proxies[i]?.port as number },
      ]),
    );
    const cluster = await connectCluster(handle?.nodes ?? [], { natMap, redisOptions: { maxRetriesPerRequest: 0 } });
    clusters.push(cluster);
    return createRedisStore({
      client: cluster,
      prefix: `sluice-lf-slow:${randomUUID()}:`,
      logger: { warn: (message) => warnings.push(message) },
      localFirst: { syncIntervalMs: 250, outageShare: 0.25 },
    });
  };

  /**
   * Limiter `s` (fixed window of `limit` a minute) on `store`, with a client on every master
   * decided and written, so each master's connection is open: the clients, and their slots.
   */
  const warmedLimiter = async (store: RedisStore, limit: number) => {
    const limiter = createLimiter({
      limit,
      window: '1m',
      algorithm: 'fixed-window',
      store,
      clock: manualClock(START),
      prefix: 's',
    });
    const taken = new Set<number>();
    const warm = await clientsOn(0, true, 3, taken, 'warm');
    for (const key of [...warm, ...(await clientsOn(0, false, 6, taken, 'warm-other'))]) await limiter.consume(key);
    await store.localFirst?.sync();
    return { limiter, taken, warm };
  };

  /**
   * A burst of new clients of limiter `s` (limit 8, outage share 2), one call each, in the
   * order `layout` gives (`true`: on the first master, which is frozen; `false`: on the others,
   * which answer 700 ms late), decided while that master is frozen: each one's remaining, by
   * master. `frozen` runs once the master is: a sync beside the read, say.
   */
  const burstWithFrozenMaster = async (
    layout: readonly [onFrozen: boolean, count: number][],
    frozen: (store: RedisStore, limiter: Limiter, warm: readonly string[]) => void = () => {},
  ) => {
    const store = await open([]);
    const { limiter, taken, warm } = await warmedLimiter(store, 8);
    const burst: [string, boolean][] = [];
    for (const [n, [onFrozen, count]] of layout.entries()) {
      for (const key of await clientsOn(0, onFrozen, count, taken, `burst${n}`)) burst.push([key, onFrozen]);
    }
    const pid = Number(((await admins[0]?.info('server')) ?? '').match(/process_id:(\d+)/)?.[1]);
    proxies[1]?.delay(700);
    proxies[2]?.delay(700);
    process.kill(pid, 'SIGSTOP');
    try {
      frozen(store, limiter, warm);
      const started = performance.now();
      const decisions = await Promise.all(burst.map(([key]) => limiter.consume(key)));
      const waitedMs = performance.now() - started;
      const remaining = (onFrozen: boolean) =>
        new Set(decisions.flatMap((d, i) => (burst[i]?.[1] === onFrozen ? [d.remaining] : [])));
      return { waitedMs, frozen: remaining(true), others: remaining(false), status: store.localFirst?.status() };
    } finally {
      process.kill(pid, 'SIGCONT');
      proxies[1]?.delay(0);
      proxies[2]?.delay(0);
      await store.localFirst?.close().catch(() => {});
    }
  };

  // The other masters' calls held the read open past its bound, so the frozen master's later
  // calls were left unsent before its first one timed out: not taken for down, their clients
  // were decided at full share (160 admitted of 40 for 20 clients over 8 requests each).
  it('decides every client of a master that fails during the read at the outage share, its calls sent or not', async () => {
    // The 5th call and the 9th to 28th on the master that freezes.
    const burst = await burstWithFrozenMaster([
      [false, 4],
      [true, 1],
      [false, 3],
      [true, 20],
      [false, 20],
    ]);
    expect(burst.waitedMs).toBeLessThan(2 * BOUND_MS + 500);
    // A quarter of 8, one spent.
    expect(burst).toMatchObject({ frozen: new Set([1]), others: new Set([7]), status: { slotsDown: 21 } });
  }, 30_000);

  // The read sent the frozen master nothing (the others' calls took its bound), and the call
  // that found it frozen was the sync's beside it: its clients were decided at full share.
  it("decides a master's clients at the outage share when a sync beside the read found it failing", async () => {
    const burst = await burstWithFrozenMaster(
      [
        [false, 8],
        [true, 20],
      ],
      (store, limiter, [warm]) => {
        // A client of the frozen master to write: the sync sends it a call, which times out.
        limiter.consume(warm as string);
        store.localFirst?.sync().catch(() => {});
      },
    );
    expect(burst).toMatchObject({ frozen: new Set([1]), others: new Set([7]) });
  }, 30_000);

  // A read's call that timed out is still delivered; its slot moved meanwhile (a reshard), the
  // sync after it went to the slot's new master, and the late call, redirected there (MOVED),
  // wrote its older total last: the client's count was lost for good.
  it('sends a slot nothing while a call of its is overdue, though the slot moved to another master', async () => {
    const warnings: string[] = [];
    const store = await open(warnings);
    const cluster = clusters.at(-1) as Cluster;
    const { limiter, taken } = await warmedLimiter(store, 10);
    const [moved] = await clientsOn(0, true, 1, taken, 'moved');
    const slot = clientSlot('s', moved as string);
    const [from, to] = await Promise.all([admins[0]?.cluster('MYID'), admins[1]?.cluster('MYID')]);
    const proxyOfTarget = `127.0.0.1:${proxies[1]?.port}`;
    proxies[0]?.delay(BOUND_MS + 500);
    try {
      const decided = limiter.consume(moved as string);
      // The read's one call is on its way to the first master; the slot, empty, moves.
      await new Promise((resolve) => setTimeout(resolve, 300));
      for (const admin of admins) await admin.cluster('SETSLOT', slot, 'NODE', to as string);
      await waitFor('the client to learn the move', async () => {
        await new Promise<void>((resolve) => cluster.refreshSlotsCache(() => resolve()));
        return cluster.slots[slot]?.[0] === proxyOfTarget;
      });
      // Its read failed: decided at the outage share, a quarter of 10.
      expect((await decided).remaining).toBe(1);
      // Nothing sent after it is held: the store's syncs of the first master's other slots,
      // each held the whole delay behind the one before, kept a call overdue on a loaded host.
      proxies[0]?.delay(0);
      // The late call lands, redirected; syncs after it write the client's total, once.
      await waitFor('the late call to be passed on', async () => proxies[0]?.delaying === 0);
      const counts = async () => {
        const keys = (await admins[1]?.cluster('GETKEYSINSLOT', slot, 10)) as string[];
        return Promise.all(keys.map(async (k) => Object.values(await (admins[1] as Redis).hgetall(k))));
      };
      await waitFor('the total written after the late call', async () => {
        await store.localFirst?.sync().catch(() => {});
        return JSON.stringify(await counts()) === '[["1"]]';
      });
      await store.localFirst?.sync();
      expect(await counts()).toEqual([['1']]);
    } finally {
      proxies[0]?.delay(0);
      await store.localFirst?.close().catch(() => {});
      for (const k of ((await admins[1]?.cluster('GETKEYSINSLOT', slot, 100)) ?? []) as string[])
        await admins[1]?.del(k);
      for (const admin of [admins[1], admins[0], admins[2]])
        await admin?.cluster('SETSLOT', slot, 'NODE', from as string);
    }
  }, 30_000);
});
