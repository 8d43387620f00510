/**
 * The loop `http-layer-instructions.ts` counts: `createHttpLimiter().handle` on one client,
 * `count` times, for one case of `httpLayerCases`: every decision at once (no promise), or for
 * `redis-pass` in rounds of `REDIS_PASS_IN_FLIGHT` promised ones. ioredis is loaded in every
 * case, as in every bench HTTP app and every app on the Redis store. Fails unless every
 * decision was made as the case makes them and had the case's outcome.
 */
import { validateHeaderValue } from 'node:http';
import { createHttpLimiter, type HttpLimiterOptions } from '@sluice/core';
import { createRedisStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import { httpLayerCases, REDIS_PASS_IN_FLIGHT } from './http-layer-cases.js';

type Request = { headers: Record<string, string>; socket: object };
type Response = Record<string, string>;

const [name = '', countArg = ''] = process.argv.slice(2);
const count = Number(countArg);
if (!(httpLayerCases as readonly string[]).includes(name) || !Number.isSafeInteger(count) || count < 1) {
  throw new Error(`usage: http-layer-loop.ts <${httpLayerCases.join('|')}> <decisions>`);
}
const refused = name.endsWith('-429');
const onRedis = name === 'deny-cache-429' || name === 'local-first-pass' || name === 'redis-pass';
const promised = name === 'redis-pass';
const client = onRedis ? new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379') : undefined;
const prefix = `sluice-bench-http-layer-${process.pid}`;

const store = client
  ? createRedisStore({
      client,
      prefix,
      ...(name === 'local-first-pass' && { localFirst: { syncIntervalMs: 50 } }),
    })
  : undefined;
const limiter = createHttpLimiter<Request, Response>(
  {
    ...(refused ? { limit: 1, window: '1h' } : { limit: 100_000_000, window: '1s' }),
    // Under callgrind a Redis reply takes far longer than the default 100 ms.
    storeTimeoutMs: 60_000,
    ...(store && { store }),
  } as HttpLimiterOptions<Request, never>,
  {
    rawRequest: (req) => req as never,
    requestUrl: () => '/',
    rawResponse: (res) => res as never,
    clientIp: () => '10.0.0.1',
    proxyTrust: () => 'none',
    trustAdvice: '',
    // Checked as Node's `setHeader` checks every value: the check is part of what a field costs.
    setHeader: (res, field, value) => {
      validateHeaderValue(field, value);
      res[field] = value;
    },
    appendHeader: (res, field, value) => {
      validateHeaderValue(field, value);
      res[field] = value;
    },
  },
);

/** Every request on one kept-alive connection, as a load generator's and a proxy's come. */
const socket = {};
const arrive = (): Request => ({ headers: {}, socket });

// The first refusal comes from Redis (and is learned); after it, each one from the cache.
for (let i = 0; i < 2; i++) await limiter.handle(arrive(), {});
const expected = refused ? 'limited' : 'next';
let matched = 0;
if (promised) {
  for (let i = 0; i < count; i += REDIS_PASS_IN_FLIGHT) {
    const round = Array.from({ length: Math.min(REDIS_PASS_IN_FLIGHT, count - i) }, () => limiter.handle(arrive(), {}));
    if (!round.every((outcome) => outcome instanceof Promise)) throw new Error(`${name}: a decision was made at once`);
    for (const outcome of await Promise.all(round)) if (outcome.action === expected) matched++;
  }
} else {
  for (let i = 0; i < count; i++) {
    const outcome = limiter.handle(arrive(), {});
    if (outcome instanceof Promise) throw new Error(`${name}: a decision was not made at once`);
    if (outcome.action === expected) matched++;
  }
}
if (matched !== count) throw new Error(`${name}: ${count - matched} decisions were not '${expected}'`);
if (client) {
  await store?.localFirst?.close();
  const keys = await client.keys(`${prefix}*`);
  if (keys.length > 0) await client.del(...keys);
  client.disconnect();
}
