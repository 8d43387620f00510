import { randomUUID } from 'node:crypto';
import { createLimiter, type Logger } from '@sluice/core';
import { createRedisStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../helpers/clock.js';
import { admitted, localFirstFleetForSuite } from '../helpers/local-first.js';
import { escapeGlob, redisTarget, standaloneRedis } from '../helpers/redis-env.js';
import { hasRedisServer, type RedisServer, startRedisServer } from '../helpers/redis-server.js';

const target = await standaloneRedis();
const ownServer = redisTarget('redis-server', hasRedisServer() || undefined, 'redis-server is not installed');
const quiet: Logger = { warn() {} };
const WINDOW_MS = 60_000;

describe.skipIf(target.skip)('Redis store, local-first mode: windows and clocks', () => {
  const prefix = `sluice-lf-windows:${randomUUID()}:`;
  const fleet = localFirstFleetForSuite(target, prefix);
  const { appProcess } = fleet;

  // The algorithm decides as of the later window when the clock steps back into an earlier one
  // (`clockLag`), but local-first booked the units to the earlier window, which no sync of the
  // later one counted: after each sync the client was admitted afresh (65 of a limit of 10).
  it.each(['fixed-window', 'sliding-window-counter'] as const)(
    '%s: a clock stepped back across a window boundary keeps the limit through syncs',
    async (algorithm) => {
      const clock = manualClock(1_700_000_040_000 - (1_700_000_040_000 % WINDOW_MS) + 500);
      const store = await appProcess();
      const limiter = createLimiter({ limit: 10, window: '1m', algorithm, store, clock, prefix: `back-${algorithm}` });
      let passed = await admitted(limiter, 'k', 5);
      clock.advance(-1000);
      for (let round = 0; round < 20; round++) {
        passed += await admitted(limiter, 'k', 3);
        await store.localFirst?.sync();
      }
      expect(passed).toBe(10);
    },
  );

  // A reset from a process that had not decided the client deleted the windows of the host's
  // clock, not the injected clock's: the client's count stayed.
  it('a reset from a process that never decided the client deletes the windows of the injected clock', async () => {
    const clock = manualClock(1_000_000_020_000);
    const options = { limit: 10, window: '1m', algorithm: 'fixed-window', clock, prefix: 'reset' } as const;
    const [a, b] = [await appProcess(), await appProcess()];
    const onA = createLimiter({ ...options, store: a });
    const onB = createLimiter({ ...options, store: b });
    expect(await admitted(onA, 'k', 10)).toBe(10);
    await a.localFirst?.sync();
    await onB.consume('someone-else');
    await onB.reset('k');
    expect(await fleet.admin.keys(`${escapeGlob(prefix)}lf:{reset|k}*`)).toEqual([]);
  });

  // Regression: a sync under way when a reset came built its calls with the client's count
  // from before, and sent them a few at a time: the reset's deletion overtook the client's
  // call, which then wrote the spent count back, and the client stayed refused.
  it.each(['fixed-window', 'sliding-window-counter'] as const)(
    '%s: a reset during a sync stays done',
    async (algorithm) => {
      const clock = manualClock(1_700_000_040_000 - (1_700_000_040_000 % WINDOW_MS) + 1000);
      const store = await appProcess();
      const limiter = createLimiter({
        limit: 5,
        window: '1m',
        algorithm,
        store,
        clock,
        prefix: `reset-sync-${algorithm}`,
      });
      expect(await admitted(limiter, 'victim', 5)).toBe(5);
      await store.localFirst?.sync();
      // Refused, and first on the next sync's list; a sync of many calls after it.
      expect(await admitted(limiter, 'victim', 1)).toBe(0);
      await Promise.all(Array.from({ length: 4000 }, (_, i) => limiter.consume(`other-${i}`)));
      const syncing = store.localFirst?.sync();
      await limiter.reset('victim');
      await syncing;
      expect(await fleet.admin.keys(`${escapeGlob(prefix)}lf:{reset-sync-${algorithm}|victim}*`)).toEqual([]);
      expect(await limiter.consume('victim')).toMatchObject({ allowed: true, remaining: 4 });
    },
  );
});

// Clients decided while syncs failed were kept, and written, whatever their windows: after an
// outage the first sync wrote every finished window of every client, timed out, and the store
// stayed offline.
describe.skipIf(ownServer.skip)('Redis store, local-first mode: windows that are over, through an outage', () => {
  let server: RedisServer;

  beforeAll(async () => {
    server = await startRedisServer();
  });
  afterAll(async () => {
    await server?.stop();
  });

  it.each([
    ['fixed-window', 50],
    ['sliding-window-counter', 100],
  ] as const)(
    '%s: forgets windows that ended during the outage and writes only those still read',
    async (algorithm, keys) => {
      const clock = manualClock(1_700_000_040_000 - (1_700_000_040_000 % WINDOW_MS));
      const client = new Redis(server.port, '127.0.0.1', { maxRetriesPerRequest: 0, retryStrategy: () => 20 });
      client.on('error', () => {});
      const prefix = `over-${algorithm}:`;
      const store = createRedisStore({ client, prefix, logger: quiet, localFirst: { syncIntervalMs: 60_000 } });
      const limiter = createLimiter({ limit: 10, window: '1m', algorithm, store, clock, prefix: 'o' });
      try {
        await client.ping();
        await server.kill();
        for (let window = 0; window < 5; window++) {
          if (window > 0) clock.advance(WINDOW_MS);
          await Promise.all(Array.from({ length: 50 }, (_, i) => limiter.consume(`w${window}-${i}`)));
          await expect(store.localFirst?.sync()).rejects.toThrow();
        }
        await server.start();
        for (let attempt = 0; ; attempt++) {
          try {
            await store.localFirst?.sync();
            break;
          } catch (error) {
            if (attempt === 100) throw error;
            await new Promise((resolve) => setTimeout(resolve, 20));
          }
        }
        // The last window's clients, and the sliding counter's the window before, which it weighs.
        expect(await client.dbsize()).toBe(keys);
      } finally {
        await store.localFirst?.close().catch(() => {});
        client.disconnect();
      }
    },
  );
});
