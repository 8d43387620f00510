import { randomUUID } from 'node:crypto';
import { createLimiter, type Logger } from '@sluice/core';
import { createRedisStore, type RedisStore } from '@sluice/redis';
import type { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { manualClock } from '../helpers/clock.js';
import {
  clientsOnTwoMasters,
  connectCluster,
  type RedisClusterHandle,
  startMastersCluster,
} from '../helpers/redis-cluster.js';
import { redisTarget } from '../helpers/redis-env.js';
import { hasRedisServer, waitFor } from '../helpers/redis-server.js';

const target = redisTarget('redis-server', hasRedisServer() || undefined, 'redis-server is not installed');
const quiet: Logger = { warn() {} };
const WINDOW_MS = 60_000;
const START = 1_700_000_040_000 - (1_700_000_040_000 % WINDOW_MS) + 1000;

// Regression: while one master of a cluster was frozen (SIGSTOP, a stalled VM), a sync waited
// for its unanswered calls of the last sync and, past the call timeout, failed without sending
// anything: the clients of the masters that answered went on at full share in every process,
// unsynced (200 admitted of a limit of 100 by two processes), and every call of the frozen
// master's slots waited out its own timeout, four at a time.
describe.skipIf(target.skip)('Redis store, local-first mode: a frozen master of a cluster', () => {
  const prefix = `sluice-lf-frozen:${randomUUID()}:`;
  let handle: RedisClusterHandle | undefined;
  const clusters: Cluster[] = [];

  beforeAll(async () => {
    handle = await startMastersCluster();
  }, 60_000);
  afterAll(async () => {
    for (const cluster of clusters) cluster.disconnect();
    await handle?.stop();
  });

  it('keeps syncing the clients of the masters that answer', async () => {
    const open = async (): Promise<RedisStore> => {
      const cluster = await connectCluster(handle?.nodes ?? [], { redisOptions: { maxRetriesPerRequest: 0 } });
      clusters.push(cluster);
      return createRedisStore({ client: cluster, prefix, logger: quiet, localFirst: { syncIntervalMs: 60_000 } });
    };
    const [a, b] = [await open(), await open()];
    const [cluster] = clusters as [Cluster];
    const options = {
      limit: 100,
      window: '1m',
      algorithm: 'fixed-window',
      clock: manualClock(START),
      prefix: 'f',
    } as const;
    const [onA, onB] = [createLimiter({ ...options, store: a }), createLimiter({ ...options, store: b })];
    // Two clients on different masters: the one to freeze, and one that answers.
    const { cold, hot, coldMasterPid: pid } = await clientsOnTwoMasters(cluster, 'f');

    for (const key of [hot, cold]) await onA.consume(key);
    await onB.consume(hot);
    process.kill(pid, 'SIGSTOP');
    try {
      // Each sync fails on the frozen master, and writes and reads the hot client all the same.
      await expect(a.localFirst?.sync()).rejects.toThrow();
      for (let i = 0; i < 9; i++) await onA.consume(hot);
      await onA.consume(cold);
      await expect(a.localFirst?.sync()).rejects.toThrow();
      await b.localFirst?.sync();
      // 10 from A and 1 from B: B's count knows A's, though A synced while its last calls to
      // the frozen master were still unanswered.
      expect(await onB.peek(hot)).toMatchObject({ remaining: 89 });
      // A reset of a client on a master that answers waited for the frozen master's late
      // calls too, and failed within its bound (ERR_SLUICE_STORE_UNAVAILABLE after 1 s).
      await onA.reset(hot);
      expect(await cluster.hvals(`${prefix}lf:{f|${hot}}:_0@${WINDOW_MS}:${Math.floor(START / WINDOW_MS)}`)).toEqual(
        [],
      );
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    for (const store of [a, b]) await store.localFirst?.close().catch(() => {});
  });

  // A sync that carried only the frozen master's clients reached no Redis, and rested the
  // timer for a call timeout: the clients of the masters that answer, decided on next, went
  // unsynced as long, every process deciding them at full share on stale counts.
  it("ends the timer's rest once a client of a master that answers is decided on", async () => {
    const cluster = await connectCluster(handle?.nodes ?? [], { redisOptions: { maxRetriesPerRequest: 0 } });
    clusters.push(cluster);
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'performance'] });
    // At 10 ms a call's timeout is 200 ms.
    const store = createRedisStore({ client: cluster, prefix, logger: quiet, localFirst: { syncIntervalMs: 10 } });
    const clock = manualClock(START);
    const limiter = createLimiter({ limit: 100, window: '1m', algorithm: 'fixed-window', clock, store, prefix: 'r' });
    const { cold, hot, coldMasterPid: pid } = await clientsOnTwoMasters(cluster, 'r');
    const written = async () =>
      (await cluster.hvals(`${prefix}lf:{r|${hot}}:_0@${WINDOW_MS}:${Math.floor(START / WINDOW_MS)}`))
        .map(Number)
        .reduce((sum, n) => sum + n, 0);
    try {
      for (const key of [hot, cold]) await limiter.consume(key);
      await store.localFirst?.sync();
      process.kill(pid, 'SIGSTOP');
      // A sync of the frozen master's client alone: it reaches no Redis, and the timer rested.
      await limiter.consume(cold);
      await expect(store.localFirst?.sync()).rejects.toThrow();
      await limiter.consume(hot);
      await vi.advanceTimersByTimeAsync(10);
      await waitFor("the next interval's sync of the client that answers", async () => (await written()) === 2, 2_000);
    } finally {
      process.kill(pid, 'SIGCONT');
      vi.useRealTimers();
      await store.localFirst?.close().catch(() => {});
    }
  });
});
