import { createLimiter } from '@sluice/core';
import { createRedisStore, type RedisStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../helpers/clock.js';
import { redisTarget } from '../helpers/redis-env.js';
import { hasRedisServer, type RedisServer, startRedisServer, waitFor } from '../helpers/redis-server.js';

const target = redisTarget('redis-server', hasRedisServer() || undefined, 'redis-server is not installed');

const PROCESSES = 4;
const LIMIT = 400;
const SHARE = 1 / PROCESSES;
const WINDOW_MS = 60_000;
const SYNC_MS = 10;
/** The load sends one request per timer turn, so at most one per ms per process. */
const RATE_PER_MS = 1;
/** A sync's round trip on loopback, with room for a busy host. */
const ROUND_TRIP_MS = 5;
/** Each load stops by itself after this many requests (about 1,000/s: at most ~8 s). */
const MAX_REQUESTS = 8000;

/** One app process: its own connection, store, limiter, and what it sent and admitted per window. */
interface AppProcess {
  client: Redis;
  store: RedisStore;
  /** Warnings logged, with when (ms, performance.now()). */
  warnings: { message: string; at: number }[];
  sent: Map<number, number>;
  admitted: Map<number, number>;
}

const bump = (counts: Map<number, number>, window: number) => counts.set(window, (counts.get(window) ?? 0) + 1);
const sentIn = (app: AppProcess, window: number) => app.sent.get(window) ?? 0;

describe.skipIf(target.skip)('Redis store, local-first mode, Redis killed and restarted under load', () => {
  let server: RedisServer;

  beforeAll(async () => {
    server = await startRedisServer();
  });
  afterAll(async () => {
    await server?.stop();
  });

  it.each(['fixed-window', 'sliding-window-counter'] as const)(
    '%s: each process admits its share while Redis is down, and the totals count once when it is back',
    async (algorithm) => {
      const clock = manualClock(1_700_000_000_000 - (1_700_000_000_000 % WINDOW_MS));
      const window = () => Math.floor(clock() / WINDOW_MS);
      const prefix = `outage-${algorithm}:`;
      const apps: AppProcess[] = [];
      for (let i = 0; i < PROCESSES; i++) {
        const client = new Redis(server.port, '127.0.0.1', { maxRetriesPerRequest: 0, retryStrategy: () => 20 });
        client.on('error', () => {});
        const warnings: AppProcess['warnings'] = [];
        const store = createRedisStore({
          client,
          prefix,
          logger: { warn: (message) => warnings.push({ message, at: performance.now() }) },
          localFirst: { syncIntervalMs: SYNC_MS, outageShare: SHARE },
        });
        apps.push({ client, store, warnings, sent: new Map(), admitted: new Map() });
      }
      const limiters = apps.map(({ store }) =>
        createLimiter({ limit: LIMIT, window: WINDOW_MS, algorithm, store, clock, prefix: 'o', onStoreError: 'deny' }),
      );
      let stopped = false;
      // Continuous load on one key, one request per timer turn.
      const loads = apps.map(async (app, i) => {
        const limiter = limiters[i] as (typeof limiters)[number];
        for (let n = 0; n < MAX_REQUESTS && !stopped; n++) {
          const at = window();
          bump(app.sent, at);
          if ((await limiter.consume('hot')).allowed) bump(app.admitted, at);
          await new Promise((resolve) => setTimeout(resolve, 1));
        }
      });
      const everyApp = (what: string, check: (app: AppProcess, i: number) => boolean) =>
        waitFor(what, async () => apps.every(check), 10_000);
      const warnedAt = (app: AppProcess, code: string) => app.warnings.find((w) => w.message.includes(code))?.at;
      const warned = (code: string) => (app: AppProcess) => warnedAt(app, code) !== undefined;

      try {
        const start = window();
        await everyApp('30 requests each with Redis up', (app) => sentIn(app, start) >= 30);
        await server.kill();
        await everyApp('every process to notice the outage', warned('WRN_SLUICE_LOCAL_FIRST_OFFLINE'));

        // A fresh window during the outage (two on, so the counter's previous window is empty).
        clock.advance(2 * WINDOW_MS);
        const outage = window();
        await everyApp('150 requests each during the outage', (app) => sentIn(app, outage) >= 150);
        // Not failing open (at most its share), nor closed (its whole share).
        const share = Math.floor(LIMIT * SHARE);
        expect(apps.map((app) => app.admitted.get(outage))).toEqual(apps.map(() => share));

        await server.start();
        await everyApp('every process to sync again', warned('WRN_SLUICE_LOCAL_FIRST_ONLINE'));
        const after = apps.map((app) => sentIn(app, outage));
        await everyApp(
          '50 more requests each once all are back',
          (app, i) => sentIn(app, outage) >= (after[i] as number) + 50,
        );
        stopped = true;
        await Promise.all(loads);

        // Redis lost everything in the crash; each process wrote its total once.
        const admitted = apps.map((app) => app.admitted.get(outage) ?? 0);
        const windowMs = limiters[0]?.policies[0]?.windowMs;
        const counted = await apps[0]?.client.hgetall(`${prefix}lf:{o|hot}:_0@${windowMs}:${outage}`);
        expect(
          Object.values(counted ?? {})
            .map(Number)
            .sort(),
        ).toEqual([...admitted].sort());
        // A process back first sees the others' outage counts at their first sync after theirs:
        // the usual bound, with the spread of the reconnections added to the sync lag.
        const backAt = apps.map((app) => warnedAt(app, 'WRN_SLUICE_LOCAL_FIRST_ONLINE') as number);
        const spreadMs = Math.max(...backAt) - Math.min(...backAt);
        const bound = (PROCESSES - 1) * RATE_PER_MS * (2 * SYNC_MS + ROUND_TRIP_MS + spreadMs);
        const total = admitted.reduce((sum, n) => sum + n, 0);
        expect(total - LIMIT).toBeLessThanOrEqual(bound);
        // Every process has synced since it came back, so each knows the window is spent: none
        // goes on admitting as if its outage share were all that counted.
        for (const limiter of limiters) expect((await limiter.consume('hot')).allowed).toBe(false);

        // With Redis back, one process alone gets the full limit of a fresh window.
        clock.advance(2 * WINDOW_MS);
        let passed = 0;
        for (let i = 0; i <= LIMIT; i++) if ((await limiters[0]?.consume('hot'))?.allowed) passed++;
        expect(passed).toBe(LIMIT);
      } finally {
        stopped = true;
        await Promise.allSettled(loads);
        for (const app of apps) {
          await app.store.localFirst?.close().catch(() => {});
          app.client.disconnect();
        }
      }
    },
    30_000,
  );
});
