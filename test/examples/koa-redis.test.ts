import { randomInt } from 'node:crypto';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { draft11 } from '../adapters/helpers.js';
import { connectRedis, standaloneRedis } from '../helpers/redis-env.js';
import { type ExampleProcess, freePort, printedCurl, runExample } from './example-process.js';

const redis = await standaloneRedis();

/**
 * examples/koa-redis, started as examples/README.md says: two app servers on one Redis, behind
 * a proxy (`BEHIND_PROXY=1`), so each test can be a client address of its own.
 */
describe.skipIf(redis.skip)('example koa-redis: app servers share one count in Redis', () => {
  const servers: { app: ExampleProcess; url: string }[] = [];
  // Clients from TEST-NET-2, new on every run, so no count is left over from another.
  const run = randomInt(0, 250);
  const client = (n: number) => `198.51.${run}.${n}`;

  const start = async (env: Record<string, string>) => {
    const port = await freePort();
    const app = runExample('koa-redis', 'start', { env: { PORT: String(port), ...env } });
    servers.push({ app, url: `http://127.0.0.1:${port}` });
    await app.waitFor(/koa-redis on http:\/\/127\.0\.0\.1:\d+/);
    return { app, url: `http://127.0.0.1:${port}` };
  };

  let a: { app: ExampleProcess; url: string };
  let b: { app: ExampleProcess; url: string };
  beforeAll(async () => {
    const url = redis.require();
    [a, b] = await Promise.all([
      start({ REDIS_URL: url, BEHIND_PROXY: '1' }),
      start({ REDIS_URL: url, BEHIND_PROXY: '1' }),
    ]);
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.app.stop()));
    const url = redis.value;
    if (url === undefined) return;
    const cleanup = await connectRedis(url);
    const keys = await cleanup.keys(`example:*|198.51.${run}.*`);
    if (keys.length > 0) await cleanup.del(...keys);
    cleanup.disconnect();
  });

  it('the printed curl line is answered under both policies', async () => {
    const curl = printedCurl(a.app.output());
    expect(curl).toEqual({ method: 'GET', url: `${a.url}/`, headers: {} });
    const res = await request(curl.url).get('').set('x-forwarded-for', client(1)).expect(200);
    expect(draft11(res).policy).toEqual({ 'per-second': { q: 10, w: 1 }, 'per-hour': { q: 1000, w: 3600 } });
  });

  it('a second app server continues the first one count', async () => {
    for (let i = 0; i < 5; i++) await request(a.url).get('/').set('x-forwarded-for', client(2)).expect(200);
    const res = await request(b.url).get('/').set('x-forwarded-for', client(2)).expect(200);
    expect(draft11(res).state['per-hour']?.r).toBe(1000 - 6);
  });

  it('10 a second over both servers together; the refused get problem documents', async () => {
    const responses = await Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        request(i % 2 === 0 ? a.url : b.url)
          .get('/')
          .set('x-forwarded-for', client(3)),
      ),
    );
    const passed = responses.filter((r) => r.status === 200).length;
    const refused = responses.filter((r) => r.status === 429);
    // A burst of 10, plus one more for each 100 ms the burst took to arrive.
    expect(passed).toBeGreaterThanOrEqual(10);
    expect(passed).toBeLessThanOrEqual(12);
    expect(passed + refused.length).toBe(24);
    expect(refused[0]?.body['violated-policies']).toEqual(['per-second']);
    expect(refused[0]?.headers['retry-after']).toBe('1');
  });

  it('BEHIND_PROXY=1 keys by the address the proxy appended, not what the client wrote', async () => {
    const first = await request(a.url)
      .get('/')
      .set('x-forwarded-for', `203.0.113.1, ${client(4)}`)
      .expect(200);
    const second = await request(a.url)
      .get('/')
      .set('x-forwarded-for', `203.0.113.2, ${client(4)}`)
      .expect(200);
    expect(draft11(first).state['per-hour']?.r).toBe(999);
    expect(draft11(second).state['per-hour']?.r).toBe(998);
  });

  it('with Redis unreachable it serves (fail open), says so once, and keeps serving', async () => {
    const down = await start({ REDIS_URL: `redis://127.0.0.1:${await freePort()}` });
    for (let i = 0; i < 3; i++) {
      const res = await request(down.url).get('/').expect(200);
      expect(res.headers.ratelimit).toBeUndefined();
    }
    await down.app.waitFor(/WRN_SLUICE_STORE_UNAVAILABLE/);
    expect(down.app.output().match(/^Redis: /gm)).toHaveLength(1);
    expect(down.app.output()).not.toMatch(/Unhandled error event/);
  });
});
