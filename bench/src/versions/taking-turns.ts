/**
 * Two versions of one policy taking turns on one client over time (a rolling deploy), on the
 * memory store and on Redis: the most requests admitted in any second, and in all, against
 * each version alone on the same requests. The figures behind docs/algorithms.md, "Taking
 * turns over time".
 *
 *   cd bench && pnpm exec tsx --conditions=@sluice/source src/versions/taking-turns.ts [redis-url]
 *
 * Each case is a list of (ms, version, requests), decided on an injected clock: bounded, a
 * few hundred decisions a case. On Redis each version has a store of its own, as two app
 * servers would, without the deny cache.
 */
import { type AlgorithmName, createLimiter, createMemoryStore, type RateLimitStore } from '@sluice/core';
import { createRedisStore } from '@sluice/redis';
import { Redis } from 'ioredis';

interface Version {
  readonly algorithm: AlgorithmName;
  readonly limit: number;
}
type Turn = readonly [atMs: number, version: 'a' | 'b', requests: number];
interface Case {
  readonly title: string;
  readonly a: Version;
  readonly b: Version;
  readonly turns: readonly Turn[];
}

// A whole second, so that fixed windows of a second start at every 1000 ms of the turns.
const START_MS = 1_700_000_000_000;
const SECOND = 1000;

const everySecond = (seconds: number, turns: (at: number) => Turn[]): Turn[] =>
  Array.from({ length: seconds }, (_, s) => turns(s * SECOND)).flat();

/** A request every 50 ms for 5 s, the versions taking turns: 20 a second, above either limit. */
const steady: Turn[] = Array.from({ length: 100 }, (_, i): Turn => [i * 50, i % 2 === 0 ? 'a' : 'b', 1]);

const cases: readonly Case[] = [
  {
    // Each second the bucket spends its burst and refills; just before the boundary the fixed
    // window takes the units carried over into a window that then ends.
    title: 'fixed-window 8/s and gcra 8/s, 10 s',
    a: { algorithm: 'fixed-window', limit: 8 },
    b: { algorithm: 'gcra', limit: 8 },
    turns: everySecond(10, (t) => [
      [t, 'b', 8],
      [t + 250, 'b', 1],
      [t + 500, 'b', 1],
      [t + 750, 'b', 1],
      [t + 990, 'a', 4],
    ]),
  },
  {
    title: 'fixed-window 8/s and gcra 8/s, one boundary',
    a: { algorithm: 'fixed-window', limit: 8 },
    b: { algorithm: 'gcra', limit: 8 },
    turns: [[990, 'a', 8], [1000, 'b', 8], ...Array.from({ length: 7 }, (_, j): Turn => [1125 + 125 * j, 'b', 1])],
  },
  {
    title: 'fixed-window 5/s and sliding-window-log 10/s',
    a: { algorithm: 'fixed-window', limit: 5 },
    b: { algorithm: 'sliding-window-log', limit: 10 },
    turns: [
      [500, 'b', 4],
      [990, 'a', 1],
      [1000, 'b', 10],
    ],
  },
  {
    title: 'gcra 5/s and sliding-window-log 10/s',
    a: { algorithm: 'gcra', limit: 5 },
    b: { algorithm: 'sliding-window-log', limit: 10 },
    turns: [
      [0, 'a', 5],
      [600, 'b', 10],
    ],
  },
  // The same algorithm and window, another limit: the carried units are counted as this
  // version would count them.
  {
    title: 'gcra 5/s and gcra 10/s, steady',
    a: { algorithm: 'gcra', limit: 5 },
    b: { algorithm: 'gcra', limit: 10 },
    turns: steady,
  },
  {
    title: 'sliding-window-counter 8/s and token-bucket 8/s, steady',
    a: { algorithm: 'sliding-window-counter', limit: 8 },
    b: { algorithm: 'token-bucket', limit: 8 },
    turns: steady,
  },
];

/** Admitted in all, and the most admitted in any second. */
interface Admitted {
  readonly total: number;
  readonly inASecond: number;
}

async function play(store: () => RateLimitStore, c: Case, only?: 'a' | 'b'): Promise<Admitted> {
  let now = START_MS;
  const prefix = `turns-${Math.random().toString(36).slice(2)}`;
  const limiter = (v: Version) =>
    createLimiter({
      store: store(),
      prefix,
      clock: () => now,
      onStoreError: 'throw',
      policies: [{ name: 'p', window: '1s', ...v }],
    });
  const limiters = { a: limiter(c.a), b: limiter(c.b) };
  const times: number[] = [];
  for (const [at, version, requests] of c.turns) {
    now = START_MS + at;
    for (let i = 0; i < requests; i++) if ((await limiters[only ?? version].consume('k')).allowed) times.push(at);
  }
  let inASecond = 0;
  for (let last = 0, first = 0; last < times.length; last++) {
    while ((times[last] as number) - (times[first] as number) >= SECOND) first++;
    inASecond = Math.max(inASecond, last - first + 1);
  }
  return { total: times.length, inASecond };
}

const url = process.argv[2] ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const client = new Redis(url, { maxRetriesPerRequest: 0 });
const memory = createMemoryStore();
const stores: Record<string, () => RateLimitStore> = {
  memory: () => memory,
  redis: () => createRedisStore({ client, denyCache: false }),
};
const shown = (r: Admitted) => `${r.inASecond} in a second, ${r.total} in all`;

console.log('| case | store | taking turns | a alone | b alone |');
console.log('| --- | --- | --- | --- | --- |');
try {
  for (const c of cases) {
    for (const [name, store] of Object.entries(stores)) {
      const [turns, a, b] = [await play(store, c), await play(store, c, 'a'), await play(store, c, 'b')];
      console.log(`| ${c.title} | ${name} | ${shown(turns)} | ${shown(a)} | ${shown(b)} |`);
    }
  }
} finally {
  client.disconnect();
}
