import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectRedis, redisTarget } from '../helpers/redis-env.js';
import { hasRedisServer, type RedisServer, startRedisServer } from '../helpers/redis-server.js';
import {
  faultLimiter,
  heldInRedis,
  LATENCY_MARGIN_MS,
  STORE_TIMEOUT_MS,
  startLoad,
  watchUnhandledRejections,
} from './fault-harness.js';

const target = redisTarget('redis-server', hasRedisServer() || undefined, 'redis-server is not installed');

/** NOSCRIPT replies counted by this server (Redis 7 `INFO errorstats`). */
async function noscriptReplies(admin: Redis): Promise<number> {
  const match = /errorstat_NOSCRIPT:count=(\d+)/.exec(await admin.info('errorstats'));
  return Number(match?.[1] ?? 0);
}

describe.skipIf(target.skip)('SCRIPT FLUSH mid-load', () => {
  let server: RedisServer | undefined;
  let client: Redis | undefined;
  let admin: Redis | undefined;

  beforeAll(async () => {
    target.require();
    server = await startRedisServer();
    client = await connectRedis(server.url, { enableAutoPipelining: true });
    admin = await connectRedis(server.url);
  });

  afterAll(async () => {
    client?.disconnect();
    admin?.disconnect();
    await server?.stop();
  });

  it('every decision still comes from Redis, once: ioredis reloads the script on NOSCRIPT', async () => {
    const rejections = watchUnhandledRejections();
    const prefix = `sluice-test:${randomUUID()}:`;
    const run = faultLimiter(client as Redis, prefix, 'deny');
    const load = startLoad(run.limiter);
    try {
      let seen = 0;
      for (let flush = 1; flush <= 5; flush++) {
        seen += 200;
        await load.until(`${seen} decisions`, () => load.decidedByRedis() >= seen);
        await (admin as Redis).script('FLUSH');
      }
      await load.until('decisions after the last flush', () => load.decidedByRedis() >= seen + 200);
    } finally {
      await load.stop();
      run.detach();
      rejections.stop();
    }
    // ioredis sends a script whole (EVAL) the first time each registered key count is used on a
    // connection, which reloads it after a flush without a NOSCRIPT: batches of varying size
    // meet fewer NOSCRIPTs than flushes, but the fallback must have run.
    expect(await noscriptReplies(admin as Redis)).toBeGreaterThanOrEqual(1);
    expect(load.failed()).toBe(0);
    expect(run.warnings).toEqual([]);
    expect(Math.max(...load.outcomes.map((o) => o.latencyMs))).toBeLessThanOrEqual(
      STORE_TIMEOUT_MS + LATENCY_MARGIN_MS,
    );
    const held = await heldInRedis(admin as Redis, prefix);
    expect(held.counter).toBe(load.decidedByRedis());
    expect(held.counter).toBe(run.charged());
    expect(held.log).toBe(held.counter);
    expect(rejections.seen).toEqual([]);
  }, 30_000);
});
