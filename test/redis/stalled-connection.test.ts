import { randomUUID } from 'node:crypto';
import { createLimiter, type Decision, type Limiter, type Logger } from '@sluice/core';
import { createRedisStore } from '@sluice/redis';
import { type Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  clientsOnTwoMasters,
  connectCluster,
  type RedisClusterHandle,
  startMastersCluster,
} from '../helpers/redis-cluster.js';
import { redisTarget, waitReady } from '../helpers/redis-env.js';
import { type RedisProxy, startRedisProxy } from '../helpers/redis-proxy.js';
import { hasRedisServer, type RedisServer, startRedisServer, waitFor } from '../helpers/redis-server.js';

const target = redisTarget('redis-server', hasRedisServer() || undefined, 'redis-server is not installed');
const quiet: Logger = { warn() {} };
const STORE_TIMEOUT_MS = 100;
const LIMIT = 1000;
const NOW = 1_700_000_000_000;

/** A limiter that refuses when the store fails, as one guarding a costly backend would. */
const denyingLimiter = (client: Redis | Cluster, prefix: string): Limiter =>
  createLimiter({
    limit: LIMIT,
    window: '1h',
    algorithm: 'fixed-window',
    store: createRedisStore({ client, prefix, logger: quiet }),
    prefix: 'stall',
    clock: () => NOW,
    onStoreError: 'deny',
    storeTimeoutMs: STORE_TIMEOUT_MS,
    logger: quiet,
  });

/**
 * `count` decisions for `key`, `concurrency` at a time, each awaited before the next; with how
 * many whole seconds they took, each of which may send Redis one call to look whether it answers.
 */
async function decide(limiter: Limiter, key: string, count: number, concurrency = 8) {
  const decisions: Decision[] = [];
  const startedAt = performance.now();
  let left = count;
  const worker = async () => {
    while (left-- > 0) decisions.push(await limiter.consume(key));
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return { decisions, looks: Math.floor((performance.now() - startedAt) / 1000) + 1 };
}

/** What Redis holds for `key`, once it answers again (the calls it held are answered first). */
async function remainingOnceAnswered(limiter: Limiter, key: string): Promise<number> {
  let remaining = Number.NaN;
  await waitFor('Redis to answer again', async () => {
    const decision = await limiter.peek(key);
    remaining = decision.remaining;
    return decision.reason === undefined;
  });
  return remaining;
}

const refusedForStore = (decisions: readonly Decision[]) =>
  decisions.filter((d) => !d.allowed && d.reason === 'store-unavailable').length;

// Regression: every call made while Redis stalled with its connection open was sent, waited in
// the process, and ran once Redis resumed, so requests 'deny' had refused with the store
// unavailable were charged all the same (408 of 408 here, 73 calls waiting): a stall of a few
// seconds spent every busy client's quota.
describe.skipIf(target.skip)('Redis store: a Redis that stops answering with its connection open', () => {
  let server: RedisServer | undefined;
  let proxy: RedisProxy | undefined;
  const clients: Redis[] = [];

  beforeAll(async () => {
    target.require();
    server = await startRedisServer();
    proxy = await startRedisProxy(server.port);
  });
  afterAll(async () => {
    for (const client of clients) client.disconnect();
    await proxy?.close();
    await server?.stop();
  });

  const connect = async (options: { commandTimeout?: number } = {}): Promise<Redis> => {
    const client = new Redis((proxy as RedisProxy).port, '127.0.0.1', { maxRetriesPerRequest: 0, ...options });
    clients.push(client);
    client.on('error', () => {});
    await waitReady(client, 5000);
    return client;
  };

  // ioredis's own `commandTimeout` rejected each call before the store's timeout, and the store
  // took that for Redis's answer: every stall ended as it began, and all 408 were charged.
  // `waves`, a bound: the callers' decisions sent while the process had waited for I/O less
  // than the store's 100 ms since the stall began (one wave on an idle process; ioredis failing
  // calls every 50 ms, or a busy process, let the callers ask again within it). `answered`:
  // whether the calls' answers reach the store once Redis resumes; ioredis drops those of the
  // calls its `commandTimeout` rejected, so their charges stand.
  it.each([
    ['', {}, 3, true],
    [", on a client with a commandTimeout shorter than the store's", { commandTimeout: 50 }, 4, false],
  ])(
    'sends nothing more once a call goes unanswered past the timeout, but one call a second to look%s',
    async (_, options, waves, answered) => {
      const held = proxy as RedisProxy;
      const client = await connect(options);
      const limiter = denyingLimiter(client, `sluice-stall:${randomUUID()}:`);
      expect(await limiter.consume('busy')).toMatchObject({ allowed: true, remaining: LIMIT - 1 });
      held.hold();
      try {
        // The first wave waits out the timeout, in the connection; what follows is not sent.
        const first = await decide(limiter, 'busy', 8);
        const { decisions, looks } = await decide(limiter, 'busy', 400);
        expect(refusedForStore([...first.decisions, ...decisions])).toBe(408);
        // The calls the process holds, waiting for Redis: the first wave's and each look's.
        expect(client.commandQueue.length).toBeLessThanOrEqual(waves + looks);
        held.release();
        // Redis ran what reached it, the first wave and a decision a look, not the 400. All were
        // refused here, so what each charged comes back once its answer reaches the store.
        let remaining = await remainingOnceAnswered(limiter, 'busy');
        if (answered) {
          await waitFor('the late charges given back', async () => {
            remaining = (await limiter.peek('busy')).remaining;
            return remaining === LIMIT - 1;
          });
        } else {
          expect(LIMIT - 1 - remaining).toBeGreaterThanOrEqual(1);
          expect(LIMIT - 1 - remaining).toBeLessThanOrEqual(8 * waves + looks);
        }
        // Answered again: the next decisions go to Redis.
        expect(await limiter.consume('busy')).toMatchObject({ allowed: true, remaining: remaining - 1 });
      } finally {
        held.release();
      }
    },
  );

  // Regression: a call's wait was counted in time the process spent busy, its replies unread in
  // the socket (a burst of work in one turn, a GC pause, a server's many socket callbacks, work
  // in a setImmediate queued before the store's flush): on a healthy Redis it held back
  // decisions as if Redis had stalled.
  it('takes no stretch of its own work, replies unread, for a stall', async () => {
    const client = await connect();
    const store = createRedisStore({ client, prefix: `sluice-busy:${randomUUID()}:`, logger: quiet });
    const hasty = (algorithm: 'fixed-window' | 'token-bucket') =>
      createLimiter({
        limit: LIMIT,
        window: '1h',
        algorithm,
        store,
        prefix: algorithm,
        clock: () => NOW,
        onStoreError: 'throw',
        storeTimeoutMs: 10,
        logger: quiet,
      });
    // Two scripts: two calls on one connection, each seeing the other unanswered.
    const [counter, bucket] = [hasty('fixed-window'), hasty('token-bucket')];
    // Redis learns the scripts first, unhurried.
    for (const algorithm of ['fixed-window', 'token-bucket'] as const)
      await createLimiter({
        limit: LIMIT,
        window: '1h',
        algorithm,
        store,
        prefix: `warm-${algorithm}`,
        clock: () => NOW,
      }).consume('warm');
    const work = (ms: number) => {
      const until = performance.now() + ms;
      while (performance.now() < until);
    };
    // Each failure caught as it comes: some may time out while the test still asks.
    const asked: Promise<unknown>[] = [];
    const failures: unknown[] = [];
    const ask = (decision: Promise<unknown>) =>
      asked.push(
        decision.catch((error: unknown) => {
          failures.push(error);
        }),
      );
    for (let round = 0; round < 3; round++) {
      // Work queued before the store's flush, which then asks on the other script.
      setImmediate(() => {
        work(30);
        for (let i = 0; i < 5; i++) ask(bucket.consume(`bucket-${round}-${i}`));
      });
      // 100 decisions asked at once go as full batches, then the process works for 30 ms.
      for (let i = 0; i < 100; i++) ask(counter.consume(`client-${i}`));
      work(30);
      await new Promise((resolve) => setImmediate(resolve));
    }
    await Promise.all(asked);
    // Some may time out, the process being busy past their 10 ms; none is held back unsent.
    expect(failures.filter((error) => (error as { code?: string }).code === 'ERR_SLUICE_STORE_UNAVAILABLE')).toEqual(
      [],
    );
  });

  // Regression: with a chain of setImmediates running, the loop polls without ever waiting, so
  // its idle time stood still: the stall went unseen, and every decision was sent into it.
  it('bounds what a stall takes from a process whose loop never waits for I/O', async () => {
    const held = proxy as RedisProxy;
    const client = await connect();
    const limiter = denyingLimiter(client, `sluice-spin:${randomUUID()}:`);
    expect(await limiter.consume('spun')).toMatchObject({ allowed: true });
    let spinning = true;
    const spin = () => {
      if (spinning) setImmediate(spin);
    };
    spin();
    held.hold();
    try {
      // 300 decisions, one every 5 ms: 1.5 s of a stall.
      const asked: Promise<Decision>[] = [];
      for (let i = 0; i < 300; i++) {
        asked.push(limiter.consume('spun'));
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      expect(refusedForStore(await Promise.all(asked))).toBe(300);
      spinning = false;
      held.release();
      // Those asked within the timeout and 250 ms (some 70), and the looks: not the 300.
      expect(LIMIT - 1 - (await remainingOnceAnswered(limiter, 'spun'))).toBeLessThanOrEqual(100);
    } finally {
      spinning = false;
      held.release();
    }
  });

  // Regression: a wait was counted only to the last turn the store had seen, so after a quiet
  // spell a burst asked at once (full batches, resets) found the stalled call barely waiting:
  // 320 decisions asked 1.5 s into a stall went to Redis, 289 of them charged when it resumed.
  it('sees a stall that began in a quiet spell from the first decision after it', async () => {
    const held = proxy as RedisProxy;
    const client = await connect();
    const limiter = denyingLimiter(client, `sluice-quiet:${randomUUID()}:`);
    expect(await limiter.consume('burst')).toMatchObject({ allowed: true });
    held.hold();
    try {
      expect(await limiter.consume('burst')).toMatchObject({ reason: 'store-unavailable' });
      // A quiet spell, the call unanswered; then a burst in one turn.
      await new Promise((resolve) => setTimeout(resolve, 1500));
      const burst = await Promise.all(Array.from({ length: 320 }, () => limiter.consume('burst')));
      expect(refusedForStore(burst)).toBe(320);
      expect(client.commandQueue.length).toBeLessThanOrEqual(2);
      held.release();
      // The call of the stall's start, and the one look the burst sent.
      expect(LIMIT - 1 - (await remainingOnceAnswered(limiter, 'burst'))).toBeLessThanOrEqual(2);
    } finally {
      held.release();
    }
  });
});

describe.skipIf(target.skip)('Redis store on a Cluster: one master frozen', () => {
  let handle: RedisClusterHandle | undefined;
  let cluster: Cluster | undefined;

  beforeAll(async () => {
    target.require();
    handle = await startMastersCluster();
    cluster = await connectCluster(handle.nodes, { redisOptions: { maxRetriesPerRequest: 0 } });
  }, 60_000);
  afterAll(async () => {
    cluster?.disconnect();
    await handle?.stop();
  });

  it("holds back the frozen master's slots only, and charges none of what it held back when it wakes", async () => {
    const slots = cluster as Cluster;
    const limiter = denyingLimiter(slots, `sluice-stall:${randomUUID()}:`);
    const { cold, hot, coldMasterPid: pid } = await clientsOnTwoMasters(slots, 'stall');

    for (const key of [hot, cold]) await limiter.consume(key);
    process.kill(pid, 'SIGSTOP');
    let looks: number;
    try {
      await decide(limiter, cold, 8);
      const frozen = await decide(limiter, cold, 400);
      looks = frozen.looks;
      expect(refusedForStore(frozen.decisions)).toBe(400);
      // The other masters decide as before, at once.
      const answering = await decide(limiter, hot, 50);
      expect(answering.decisions.every((d) => d.allowed && d.reason === undefined)).toBe(true);
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    // What reached the frozen master (the first wave and the looks, all refused here) is given
    // back as its answers arrive.
    const charged = LIMIT - 1 - (await remainingOnceAnswered(limiter, cold));
    expect(charged).toBeLessThanOrEqual(8 * (1 + looks));
    await waitFor('the late charges given back', async () => (await limiter.peek(cold)).remaining === LIMIT - 1);
    expect(await limiter.peek(hot)).toMatchObject({ remaining: LIMIT - 51 });
  }, 30_000);
});
