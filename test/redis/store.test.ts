import { randomUUID } from 'node:crypto';
import {
  createLimiter,
  isSluiceError,
  MAX_EPOCH_MS,
  type Policy,
  type PolicyOptions,
  type RateLimitStore,
  storeKey,
  toPolicy,
} from '@sluice/core';
import { createMemoryStore } from '@sluice/memory';
import { createRedisStore, type RedisStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_ALGORITHMS } from '../helpers/algorithms.js';
import { manualClock } from '../helpers/clock.js';
import { connectRedis, deleteKeys, escapeGlob, redisTarget, standaloneRedis } from '../helpers/redis-env.js';
import { hasRedisServer, startRedisServer, waitFor } from '../helpers/redis-server.js';
import { encodeStates, storedStates } from '../helpers/redis-state.js';

const target = await standaloneRedis();
const redisServer = redisTarget('redis-server', hasRedisServer() || undefined, 'redis-server is not installed');

/** Calls of each command this server has answered, from `INFO commandstats`. */
async function commandCalls(client: Redis): Promise<Record<string, number>> {
  const calls: Record<string, number> = {};
  for (const [, name, count] of (await client.info('commandstats')).matchAll(/cmdstat_(\w+):calls=(\d+)/g))
    calls[name as string] = Number(count);
  return calls;
}
const NOW = 1_700_000_000_000;

describe.skipIf(target.skip)('Redis store on a standalone Redis', () => {
  const prefix = `sluice-test:${randomUUID()}:`;
  let client: Redis;
  let store: RedisStore;

  beforeAll(async () => {
    client = await connectRedis(target.require(), { enableAutoPipelining: true });
    store = createRedisStore({ client, prefix });
  });

  afterAll(async () => {
    if (client === undefined) return;
    await deleteKeys(client, prefix);
    client.disconnect();
  });

  const keysOf = (pattern: string) => client.keys(`${escapeGlob(prefix)}${pattern}`);

  it('keeps one key per client under <prefix>{<namespace>|<client key>}, and a key per sliding log, in the reference layout', async () => {
    const limiter = createLimiter({
      policies: [
        { name: 'count', limit: 5, window: '1m', algorithm: 'fixed-window' },
        { name: 'log', limit: 5, window: '1m', algorithm: 'sliding-window-log' },
        { name: 'cell', limit: 5, window: '1m', algorithm: 'gcra' },
      ],
      store,
      prefix: 'layout',
      clock: () => NOW,
    });
    await limiter.consume('user:1');
    await limiter.consume('user:1', { cost: 2 });
    const clientKey = `${prefix}{layout|user:1}`;
    expect((await keysOf('{layout|*')).sort()).toEqual([clientKey, `${clientKey}:log`]);
    const windowEnd = (Math.floor(NOW / 60_000) + 1) * 60_000;
    // Per slot, in policy order: its version, its state, then the units spent and when it fully
    // resets. Three requests of 12 s each put the TAT 36 s ahead; the log keeps its total here,
    // its list apart.
    expect(await storedStates(client, clientKey)).toEqual([
      {
        slot: 'count',
        version: 'fw.5.60000',
        numbers: [Math.floor(NOW / 60_000), 3, 0],
        used: 3,
        resetAt: windowEnd,
      },
      { slot: 'log', version: 'sl.5.60000', numbers: [3, 0, 0], used: 3, resetAt: NOW + 60_000 },
      { slot: 'cell', version: 'gc.5.60000', numbers: [NOW + 36_000, 0, 0], used: 3, resetAt: NOW + 36_000 },
    ]);
    expect(await client.lrange(`${clientKey}:log`, 0, -1)).toEqual([String(NOW), '3']);
  });

  // With an injected clock the client's string was kept only as long as its states lived on
  // that clock (here 1 ms), not the 60 s floor, when a refusal only trimmed a log: a Redis
  // slower than 1 ms between two calls then forgot the refusing log and admitted again.
  it('keeps the state string for at least 60 s on an injected clock when a refusal only trims a log', async () => {
    const clock = manualClock(NOW);
    const limiter = createLimiter({
      policies: [
        { name: 'short', limit: 1, window: 1, algorithm: 'sliding-window-log' },
        { name: 'long', limit: 1, window: 2, algorithm: 'sliding-window-log' },
      ],
      store,
      prefix: 'trim-ttl',
      clock,
    });
    expect((await limiter.consume('k')).allowed).toBe(true);
    clock.advance(1);
    expect((await limiter.consume('k')).allowed).toBe(false);
    expect(await client.pttl(`${prefix}{trim-ttl|k}`)).toBeGreaterThan(59_000);
    expect((await limiter.consume('k')).allowed).toBe(false);
  });

  // A new version of a log policy rewrote the old version's list when it read it, and when
  // the decision was then refused nothing set the list's expiry: the key lived forever.
  it('a log taken over from another version expires with it, even when the decision is refused', async () => {
    const log = (limit: number) => [{ name: 'log', limit, window: '1m', algorithm: 'sliding-window-log' } as const];
    const v1 = createLimiter({ policies: log(2), store, prefix: 'log-takeover', clock: () => NOW });
    const v2 = createLimiter({ policies: log(1), store, prefix: 'log-takeover', clock: () => NOW + 1 });
    expect((await v1.consume('k')).allowed).toBe(true);
    expect((await v1.consume('k')).allowed).toBe(true);
    expect((await v2.consume('k')).allowed).toBe(false);
    const logKey = `${prefix}{log-takeover|k}:log`;
    expect(await client.lrange(logKey, 0, -1)).toEqual([String(NOW + 1), '2']);
    const ttl = await client.pttl(logKey);
    expect(ttl).toBeGreaterThan(59_000);
    expect(ttl).toBeLessThanOrEqual(60_000);
  });

  // Releases before this one named a usual policy's version with all six figures
  // ('sc.5.60000.5.0.0'); this one leaves out a capacity equal to the limit and no refill
  // ('sc.5.60000'). An upgraded server finds the earlier release's state under another version
  // and converts it through its units spent, as it would a changed limit: nothing is reset.
  it("converts a state an earlier release wrote under its six-figure version, keeping the client's units spent", async () => {
    const clientKey = `${prefix}{upgraded|k}`;
    const index = Math.floor(NOW / 60_000);
    const earlier = { slot: 'minute', version: 'sc.5.60000.5.0.0', numbers: [index, 3, 0], used: 3 };
    await client.set(clientKey, encodeStates([{ ...earlier, resetAt: (index + 2) * 60_000 }]), 'PX', 120_000);
    const limiter = createLimiter({
      policies: [{ name: 'minute', limit: 5, window: '1m', algorithm: 'sliding-window-counter' }],
      store,
      prefix: 'upgraded',
      clock: () => NOW,
    });
    expect((await limiter.consume('k')).remaining).toBe(1);
    expect((await limiter.consume('k')).remaining).toBe(0);
    expect((await limiter.consume('k')).allowed).toBe(false);
    expect((await storedStates(client, clientKey)).map((r) => [r.slot, r.version, r.used])).toEqual([
      ['minute', 'sc.5.60000', 5],
    ]);
  });

  // The string here is in the text layout of earlier releases (and their six-figure versions),
  // which this one reads and replaces.
  it('reads states by slot, starts a new slot afresh, and keeps the slots of another version', async () => {
    const clientKey = `${prefix}{changed|k}`;
    const index = Math.floor(NOW / 60_000);
    const gone = `gone@gc.5.1000.5.0.0=${NOW + 500},0;1,${NOW + 500}`;
    await client.set(clientKey, ` ${gone} kept@fw.5.60000.5.0.0=${index},4;4,${(index + 1) * 60_000}`, 'PX', 60_000);
    const limiter = createLimiter({
      policies: [
        { name: 'kept', limit: 5, window: '1m', algorithm: 'fixed-window' },
        { name: 'new', limit: 5, window: '1m', algorithm: 'fixed-window' },
      ],
      store,
      prefix: 'changed',
      clock: () => NOW,
    });
    const decision = await limiter.consume('k');
    expect(decision.policies.map((p) => [p.name, p.remaining])).toEqual([
      ['kept', 0],
      ['new', 4],
    ]);
    // The limiter's own slots first, in policy order, then the other version's.
    const windowEnd = (index + 1) * 60_000;
    expect(await storedStates(client, clientKey)).toEqual([
      { slot: 'kept', version: 'fw.5.60000', numbers: [index, 5, 0], used: 5, resetAt: windowEnd },
      { slot: 'new', version: 'fw.5.60000', numbers: [index, 1, 0], used: 1, resetAt: windowEnd },
      { slot: 'gone', version: 'gc.5.1000.5.0.0', numbers: [NOW + 500, 0, 0], used: 1, resetAt: NOW + 500 },
    ]);
  });

  it('keeps hostile client keys inside their hash tag, apart from each other and from other namespaces', async () => {
    const hostile = ['evil}{tag}\n', `${'x'.repeat(300)}`, '{}', 'a|b'];
    const limiter = createLimiter({
      limit: 1,
      window: '1h',
      algorithm: 'fixed-window',
      store,
      prefix: 'hostile',
      clock: () => NOW,
    });
    for (const key of hostile) expect((await limiter.consume(key)).allowed).toBe(true);
    const keys = await keysOf('{hostile|*');
    expect(keys).toHaveLength(hostile.length);
    for (const key of keys) {
      const tag = key.slice(key.indexOf('{') + 1, key.indexOf('}'));
      expect(tag).toMatch(/^hostile\|#[A-Za-z0-9_-]{43}$/);
      expect(key.indexOf('}')).toBe(key.lastIndexOf('}'));
    }
    // `a:b` + `c` and `a` + `b:c` would read alike joined by `:`; they must count apart.
    const ab = createLimiter({
      limit: 1,
      window: '1h',
      algorithm: 'fixed-window',
      store,
      prefix: 'a:b',
      clock: () => NOW,
    });
    const a = createLimiter({
      limit: 1,
      window: '1h',
      algorithm: 'fixed-window',
      store,
      prefix: 'a',
      clock: () => NOW,
    });
    expect((await ab.consume('c')).allowed).toBe(true);
    expect((await a.consume('b:c')).allowed).toBe(true);
    expect(storeKey('b:c')).toBe('b:c');
  });

  it('refuses a request made without a limiter whose client key holds a brace or namespace a `|`', async () => {
    const { policies } = createLimiter({ limit: 5, window: '1m', store: createMemoryStore(), prefix: 'direct' });
    const asked = (namespace: string, key: string) => ({
      namespace,
      key,
      policies,
      capacities: [5],
      cost: 1,
      now: NOW,
    });
    for (const [namespace, key] of [
      ['direct', 'a{b'],
      ['direct', 'tag}'],
      ['direct', '{}'],
      ['di|rect', 'k'],
      ['{direct}', 'k'],
    ]) {
      await expect(store.consume(asked(namespace as string, key as string))).rejects.toMatchObject({
        code: 'ERR_SLUICE_INVALID_KEY',
      });
    }
    expect((await store.consume(asked('direct', 'plain:key.1'))).allowed).toBe(true);
    expect(await keysOf('{di*')).toEqual([`${prefix}{direct|plain:key.1}`]);
  });

  it('sends one script call per turn of the event loop for up to 32 decisions, one per refund and peek, and one DEL per reset', async () => {
    // A Redis of its own, so that its command counts are this test's alone.
    redisServer.require();
    const server = await startRedisServer();
    const own = new Redis(server.port, '127.0.0.1', { enableAutoPipelining: true, maxRetriesPerRequest: 0 });
    try {
      const limiter = createLimiter({
        policies: [
          { name: 's', limit: 3, window: '1s', algorithm: 'token-bucket' },
          { name: 'h', limit: 100, window: '1h', algorithm: 'sliding-window-counter' },
          { name: 'd', limit: 1000, window: '1d', algorithm: 'leaky-bucket' },
        ],
        store: createRedisStore({ client: own, prefix }),
        prefix: 'one-call',
      });
      // 40 decisions asked at once: a call of 32 leaves when the 33rd comes, 8 at the turn's end.
      const decisions = await Promise.all(Array.from({ length: 40 }, (_, i) => limiter.consume(`k${i % 4}`)));
      expect(decisions.filter((d) => d.allowed)).toHaveLength(12);
      await limiter.peek('k0');
      await limiter.refund('k0', 1);
      await limiter.reset('k1');
      const calls = await commandCalls(own);
      // EVAL where this connection had not loaded the script yet, EVALSHA after. The counts
      // include what scripts call: never EVAL, and no DEL here, as no call leaves a client fresh.
      expect({ scripts: (calls.eval ?? 0) + (calls.evalsha ?? 0), del: calls.del }).toEqual({ scripts: 4, del: 1 });
    } finally {
      own.disconnect();
      await server.stop();
    }
  });

  it("decides on Redis's clock when no clock is injected", async () => {
    const policies: Policy[] = [toPolicy({ limit: 2, window: '1s', algorithm: 'gcra' }, 'p')];
    const before = await client.time();
    const reply = await store.consume({
      namespace: 'clock',
      key: 'k',
      policies,
      capacities: [2],
      cost: 1,
      now: undefined,
    });
    const after = await client.time();
    const ms = ([s, us]: [number | string, number | string]) => Number(s) * 1000 + Math.floor(Number(us) / 1000);
    expect(reply.now).toBeGreaterThanOrEqual(ms(before as never));
    expect(reply.now).toBeLessThanOrEqual(ms(after as never));
  });

  const expiresAt = async (key: string) => Number(await client.call('PEXPIRETIME', key));
  const redisNow = async () => {
    const [seconds, micros] = await client.time();
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  };

  it("expires a client's key with its longest resetAfterMs, and a log's key with its own, on Redis's clock", async () => {
    const policies = [
      toPolicy({ name: 'fw', limit: 10, window: '1m', algorithm: 'fixed-window' }, 'p'),
      toPolicy({ name: 'gc', limit: 10, window: '1s', algorithm: 'gcra' }, 'p'),
      toPolicy({ name: 'sl', limit: 5, window: '10s', algorithm: 'sliding-window-log' }, 'p'),
      toPolicy({ name: 'tb', limit: 4, window: '2s', algorithm: 'token-bucket' }, 'p'),
    ];
    const capacities = policies.map((p) => p.capacity);
    const reply = await store.consume({ namespace: 'ttl', key: 'k', policies, capacities, cost: 2, now: undefined });
    expect(reply.allowed).toBe(true);
    const resets = reply.outcomes.map((o) => o.resetAfterMs);
    // Redis counts a TTL from its clock when the key is written, which may have moved on a
    // millisecond or so since the script read `now`; an expiry that late changes no decision.
    const expectExpiry = async (key: string, resetAfterMs: number) => {
      const at = await expiresAt(key);
      expect(at, key).toBeGreaterThanOrEqual(reply.now + resetAfterMs - 1);
      expect(at, key).toBeLessThanOrEqual(reply.now + resetAfterMs + 5);
    };
    // The client's string also records when the log fully resets, for another version to read.
    await expectExpiry(`${prefix}{ttl|k}`, Math.max(...(resets as number[])));
    await expectExpiry(`${prefix}{ttl|k}:${policies[2]?.slot}`, resets[2] as number);
  });

  it('keeps keys at least a minute on an injected clock, which Redis cannot relate to its own', async () => {
    const short = { name: 'short', limit: 10, window: '1s', algorithm: 'gcra' } as const;
    const long = { name: 'long', limit: 10, window: '1h', algorithm: 'fixed-window' } as const;
    const limiter = (policies: (typeof short | typeof long)[], prefix: string) =>
      createLimiter({ policies, store, prefix, clock: () => NOW });
    const before = await redisNow();
    const shortOnly = await limiter([short], 'ttl-short').consume('k');
    const both = await limiter([short, long], 'ttl-both').consume('k');
    const after = await redisNow();
    expect(shortOnly.resetAfterMs).toBe(100);
    expect(await expiresAt(`${prefix}{ttl-short|k}`)).toBeGreaterThanOrEqual(before + 60_000);
    expect(await expiresAt(`${prefix}{ttl-short|k}`)).toBeLessThanOrEqual(after + 60_000);
    const longReset = both.policies[1]?.resetAfterMs as number;
    expect(longReset).toBeGreaterThan(60_000);
    expect(await expiresAt(`${prefix}{ttl-both|k}`)).toBeGreaterThanOrEqual(before + longReset);
    expect(await expiresAt(`${prefix}{ttl-both|k}`)).toBeLessThanOrEqual(after + longReset);
  });

  it('leaves no key behind once every state is back to fresh', async () => {
    const limiter = createLimiter({
      policies: [
        { name: 'a', limit: 3, window: '300ms', algorithm: 'sliding-window-counter' },
        { name: 'b', limit: 3, window: '400ms', algorithm: 'sliding-window-log' },
        { name: 'c', limit: 3, window: '300ms', algorithm: 'token-bucket', refillAmount: 1, refillInterval: '100ms' },
        { name: 'd', limit: 3, window: '300ms', algorithm: 'leaky-bucket', queue: { maxDelayMs: 200 } },
      ],
      store,
      prefix: 'leak',
    });
    await Promise.all(Array.from({ length: 200 }, (_, i) => limiter.consume(`k${i % 20}`)));
    await limiter.refund('k1', 1);
    expect((await keysOf('{leak|*')).length).toBeGreaterThan(0);
    // Redis's own expiry at work: the longest reset here is 2 windows of the counter (600 ms).
    await waitFor('every key to expire', async () => (await keysOf('{leak|*')).length === 0, 5_000);
  });

  it('refunds and resets through the same keys, never beyond a fresh state', async () => {
    const clock = manualClock(NOW);
    const limiter = createLimiter({
      limit: 3,
      window: '1m',
      algorithm: 'sliding-window-log',
      store,
      prefix: 'undo',
      clock,
    });
    for (let i = 0; i < 3; i++) expect((await limiter.consume('k')).allowed).toBe(true);
    expect((await limiter.consume('k')).allowed).toBe(false);
    await limiter.refund('k', 1);
    expect(await limiter.consume('k')).toMatchObject({ allowed: true, remaining: 0 });
    await limiter.reset('k');
    expect(await keysOf('{undo|k}*')).toEqual([]);
    await limiter.refund('never-seen', 5);
    expect(await keysOf('{undo|never-seen}*')).toEqual([]);
    expect((await limiter.peek('k')).remaining).toBe(3);
  });

  it('carries soft and elastic capacities, and queue delays, through the script', async () => {
    let load = 0;
    const elastic = createLimiter({
      limit: 10,
      window: '1h',
      algorithm: 'fixed-window',
      store,
      prefix: 'elastic',
      clock: () => NOW,
      throttle: { mode: 'elastic', maxOveragePercent: 100, load: () => load },
    });
    const decisions = [];
    for (let i = 0; i < 21; i++) decisions.push(await elastic.consume('k'));
    expect(decisions.filter((d) => d.allowed)).toHaveLength(20);
    expect(decisions.filter((d) => d.overLimit === 'elastic')).toHaveLength(10);
    load = 1;
    expect((await elastic.consume('k2', { cost: 10 })).allowed).toBe(true);
    expect((await elastic.consume('k2')).allowed).toBe(false);

    const queue = createLimiter({
      limit: 2,
      window: '1s',
      algorithm: 'gcra',
      queue: { maxDelayMs: 1000 },
      store,
      prefix: 'queue',
      clock: () => NOW,
    });
    const delays = [];
    for (let i = 0; i < 5; i++) delays.push(await queue.consume('k'));
    expect(delays.map((d) => [d.allowed, d.delayMs])).toEqual([
      [true, 0],
      [true, 0],
      [true, 500],
      [true, 1000],
      [false, 0],
    ]);
  });

  it('decides up to 16 policies in one call and refuses more', async () => {
    const many = (n: number) =>
      Array.from({ length: n }, (_, i) =>
        toPolicy({ name: `p${i}`, limit: 5, window: 1000 * (i + 1), algorithm: i % 2 ? 'gcra' : 'fixed-window' }, 'p'),
      );
    const request = (policies: Policy[]) => ({
      namespace: 'many',
      key: 'k',
      policies,
      capacities: policies.map((p) => p.capacity),
      cost: 1,
      now: NOW,
    });
    const reply = await store.consume(request(many(16)));
    expect(reply.outcomes).toHaveLength(16);
    expect(reply.allowed).toBe(true);
    const error = await store.consume(request(many(17))).catch((e: unknown) => e);
    expect(isSluiceError(error) && error.code).toBe('ERR_SLUICE_INVALID_POLICIES');
  });

  it('decides a batch whose decisions share some arguments and not others exactly as one by one', async () => {
    // One call carries them all; runs of shared arguments break at each change of cost or op.
    const policies = [toPolicy({ limit: 5, window: 1000, algorithm: 'gcra' }, 'p')];
    const steps: Array<{ op: 'consume' | 'refund'; key: string; cost: number }> = [
      { op: 'consume', key: 'a', cost: 1 },
      { op: 'consume', key: 'b', cost: 1 },
      { op: 'consume', key: 'a', cost: 2 },
      { op: 'consume', key: 'a', cost: 2 },
      { op: 'refund', key: 'a', cost: 1 },
      { op: 'consume', key: 'c', cost: 1 },
      { op: 'consume', key: 'a', cost: 1 },
      { op: 'consume', key: 'a', cost: 1 },
    ];
    const request = (key: string, cost: number) => ({
      namespace: 'runs',
      key,
      policies,
      capacities: [5],
      cost,
      now: NOW,
    });
    const run = (on: RateLimitStore) => (step: (typeof steps)[number]) =>
      step.op === 'consume' ? on.consume(request(step.key, step.cost)) : on.refund(request(step.key, step.cost));
    const together = await Promise.all(steps.map(run(store)));
    const reference = createMemoryStore();
    const alone = [];
    for (const step of steps) alone.push(await run(reference)(step));
    expect(together).toEqual(alone);
  });

  it('decides a batch of limiters with different policy counts, algorithms and capacities exactly as one by one', async () => {
    // Asked in one turn: the gcra limiters share the gcra script's call, as runs of 1 and 2
    // policies; the mixed ones share the mixed script's, with an interval refill and a log.
    const policy = (options: PolicyOptions) => toPolicy(options, 'p');
    const limiters = [
      [policy({ limit: 3, window: 1000, algorithm: 'gcra' })],
      [
        policy({ name: 'a', limit: 2, window: 1000, algorithm: 'gcra' }),
        policy({ name: 'b', limit: 4, window: 5000, algorithm: 'gcra' }),
      ],
      [
        policy({ name: 'a', limit: 2, window: 1000, algorithm: 'fixed-window' }),
        policy({ name: 'b', limit: 3, window: 2000, algorithm: 'gcra' }),
      ],
      [
        policy({ name: 'a', limit: 4, window: 1000, algorithm: 'token-bucket', refillAmount: 2, refillInterval: 500 }),
        policy({ name: 'b', limit: 3, window: 2000, algorithm: 'sliding-window-log' }),
        policy({ name: 'c', limit: 5, window: 3000, algorithm: 'sliding-window-counter' }),
      ],
    ];
    const request = (set: number, key: string, raised: boolean) => {
      const policies = limiters[set] as Policy[];
      return {
        namespace: `mixed-runs-${set}`,
        key,
        policies,
        capacities: policies.map((p) => p.capacity + (raised ? 1 : 0)),
        cost: 1,
        now: NOW,
      };
    };
    const steps = Array.from({ length: 24 }, (_, i) => request(i % 4, `k${i % 3}`, i % 5 === 0));
    const together = await Promise.all(steps.map((r) => store.consume(r)));
    const reference = createMemoryStore();
    const alone = [];
    for (const r of steps) alone.push(await reference.consume(r));
    expect(together).toEqual(alone);
  });

  it('answers the largest call there is: 32 decisions of 16 policies, 2,049 numbers in one reply', async () => {
    const policies = Array.from({ length: 16 }, (_, i) =>
      toPolicy({ name: `p${i}`, limit: 5, window: 1000 * (i + 1), algorithm: i % 2 ? 'gcra' : 'fixed-window' }, 'p'),
    );
    // Asked in one turn, so one batch carries them all: one client key each, 32 keys.
    const replies = await Promise.all(
      Array.from({ length: 32 }, (_, i) =>
        store.consume({
          namespace: 'largest',
          key: `k${i}`,
          policies,
          capacities: policies.map((p) => p.capacity),
          cost: 1,
          now: NOW,
        }),
      ),
    );
    for (const reply of replies) {
      expect(reply.allowed).toBe(true);
      expect(reply.outcomes.map((o) => o.remaining)).toEqual(Array(16).fill(4));
    }
  });

  it('refuses a clock that is not whole epoch milliseconds instead of truncating it', async () => {
    const policies = [toPolicy({ limit: 5, window: 1000 }, 'p')];
    const error = await store
      .consume({ namespace: 'frac', key: 'k', policies, capacities: [5], cost: 1, now: NOW + 0.5 })
      .catch((e: unknown) => e);
    expect(isSluiceError(error) && error.code).toBe('ERR_SLUICE_INVALID_CLOCK');
  });

  it("refuses a refund's chargeAgeMs that is not a whole number of 0 or more, sending nothing", async () => {
    const policies = [toPolicy({ limit: 5, window: 1000 }, 'p')];
    const asked = { namespace: 'age', key: 'k', policies, capacities: [5], cost: 1, now: NOW };
    await store.consume(asked);
    for (const chargeAgeMs of [-1, 0.5, Number.NaN]) {
      await expect(store.refund({ ...asked, chargeAgeMs })).rejects.toMatchObject({
        code: 'ERR_SLUICE_INVALID_OPTION',
      });
    }
    expect((await store.consume({ ...asked, cost: 0 })).outcomes[0]?.remaining).toBe(4);
  });

  it('decides as the memory store does at the latest time a clock may read (2^50 ms), and refuses a later one', async () => {
    for (const algorithm of ALL_ALGORITHMS) {
      let now = MAX_EPOCH_MS - 10_000;
      const made = (on: RateLimitStore) =>
        createLimiter({ limit: 3, window: '1m', algorithm, store: on, clock: () => now, prefix: `end-${algorithm}` });
      const [memory, redis] = [made(createMemoryStore()), made(store)];
      for (let step = 0; step < 6; step++) {
        now = Math.min(MAX_EPOCH_MS, now + 2_000);
        const [expected, got] = await Promise.all([memory.consume('k'), redis.consume('k')]);
        expect([algorithm, step, got.allowed, got.remaining, got.retryAfterMs, got.resetAfterMs]).toEqual([
          algorithm,
          step,
          expected.allowed,
          expected.remaining,
          expected.retryAfterMs,
          expected.resetAfterMs,
        ]);
      }
      // Past 2^52 a sound state read as damaged here, and every request passed as a fresh client's.
      now = 2 ** 52;
      await expect(redis.consume('k')).rejects.toMatchObject({ code: 'ERR_SLUICE_INVALID_CLOCK' });
    }
    const policies = [toPolicy({ limit: 5, window: 1000 }, 'p')];
    const late = { namespace: 'late', key: 'k', policies, capacities: [5], cost: 1, now: MAX_EPOCH_MS + 1 };
    await expect(store.consume(late)).rejects.toMatchObject({ code: 'ERR_SLUICE_INVALID_CLOCK' });
  });

  it('works with a client keyPrefix, and connects a lazy client on first use', async () => {
    const lazy = (await import('ioredis')).Redis;
    const other = new lazy(target.require(), { lazyConnect: true, keyPrefix: `${prefix}app:` });
    other.on('error', () => {});
    try {
      const limiter = createLimiter({
        limit: 1,
        window: '1h',
        store: createRedisStore({ client: other, prefix: '' }),
        logger: { warn: () => {} },
        prefix: 'lazy',
        clock: () => NOW,
      });
      // The first call connects it, and waits for the connection.
      const first = await limiter.consume('k');
      expect(first.allowed).toBe(true);
      expect(first.reason).toBeUndefined();
      expect((await limiter.consume('k')).allowed).toBe(false);
      expect(await keysOf('app:{lazy|k}*')).toEqual([`${prefix}app:{lazy|k}`]);
    } finally {
      other.disconnect();
    }
  });

  it('never closes the client it was given', () => {
    expect(client.status).toBe('ready');
    expect(Object.keys(store).sort()).toEqual([
      'backing',
      'checkPolicies',
      'checksReplies',
      'consume',
      'consumeAll',
      'decideAtOnce',
      'name',
      'prefix',
      'refund',
      'reset',
      'takesKeysAsGiven',
    ]);
  });
});
