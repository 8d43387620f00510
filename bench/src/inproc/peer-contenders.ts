import { createRequire } from 'node:module';
import type { Redis } from 'ioredis';
import { type Contender, type ContenderFactory, limitFor, type Mode, type Setup, windowFor } from './contender.js';
import { redisClient } from './sluice-contenders.js';

const require = createRequire(import.meta.url);

type Callback = (error: Error | null, result: { current: number; ttl: number }) => void;
interface FastifyStore {
  incr(key: string, cb: Callback, timeWindow: number, max: number): void;
}
type FastifyStoreClass = new (
  continueExceeding: boolean,
  exponentialBackoff: boolean,
  ...rest: unknown[]
) => FastifyStore;
type KoaLimiterClass = new (options: Record<string, unknown>) => { get(): Promise<{ remaining: number }> };

/** @fastify/rate-limit wraps its callback stores in a promise per request; so does this. */
const viaPromise = (store: FastifyStore, mode: Mode) => (key: string) =>
  new Promise<{ current: number }>((resolve, reject) =>
    store.incr(key, (error, result) => (error ? reject(error) : resolve(result)), windowFor(mode), limitFor(mode)),
  );

/** Counting stores leave the decision to their middleware: allowed while the count is within `max`. */
const counted = (max: number) => (result: unknown, rejected: boolean) => {
  const counts = result as { current?: number; totalHits?: number };
  return !rejected && (counts.current ?? counts.totalHits ?? 0) <= max;
};

const rlfAllowed = (_result: unknown, rejected: boolean) => !rejected;

async function withRedis(setup: Setup, build: (client: Redis) => Contender | Promise<Contender>) {
  const client = await redisClient(setup);
  await client.ping();
  const contender = await build(client);
  return { ...contender, close: () => client.disconnect() };
}

/**
 * Peers, each at its documented entry point for the store alone. Each loads its package when
 * it is made: a cell's process loads only its own contender's (see `contenderFor`).
 */
export const peerContenders: Record<string, ContenderFactory> = {
  'express-rate-limit:memory': async ({ mode }) => {
    const { MemoryStore } = await import('express-rate-limit');
    const store = new MemoryStore();
    store.init({ windowMs: windowFor(mode) } as never);
    return { call: (key) => store.increment(key), allowed: counted(limitFor(mode)), close: () => store.shutdown() };
  },
  '@fastify/rate-limit:memory': async ({ mode, maxKeys }) => {
    const LocalStore = require('@fastify/rate-limit/store/LocalStore.js') as FastifyStoreClass;
    const max = limitFor(mode);
    return { call: viaPromise(new LocalStore(false, false, maxKeys), mode), allowed: counted(max), close: () => {} };
  },
  'koa-ratelimit:memory': async ({ mode }) => {
    const Limiter = require('koa-ratelimit/limiter/memory') as KoaLimiterClass;
    const db = new Map();
    const max = limitFor(mode);
    // koa-ratelimit builds one Limiter per request; so does this.
    return {
      call: (id) => new Limiter({ id, db, max, duration: windowFor(mode) }).get(),
      allowed: (r) => (r as { remaining: number }).remaining > 0,
      close: () => {},
    };
  },
  'rate-limiter-flexible:memory': async ({ mode }) => {
    const { RateLimiterMemory } = await import('rate-limiter-flexible');
    const limiter = new RateLimiterMemory({ points: limitFor(mode), duration: windowFor(mode) / 1000 });
    return { call: (key) => limiter.consume(key), allowed: rlfAllowed, close: () => {} };
  },
  'rate-limit-redis:redis': (setup) =>
    withRedis(setup, async (client) => {
      const { RedisStore: RateLimitRedisStore } = await import('rate-limit-redis');
      const store = new RateLimitRedisStore({
        sendCommand: (command: string, ...args: string[]) => client.call(command, ...args) as never,
      });
      store.init({ windowMs: windowFor(setup.mode) } as never);
      return { call: (key) => store.increment(key), allowed: counted(limitFor(setup.mode)), close: () => {} };
    }),
  'rate-limiter-flexible:redis': (setup) =>
    withRedis(setup, async (client) => {
      const { RateLimiterRedis } = await import('rate-limiter-flexible');
      const limiter = new RateLimiterRedis({
        storeClient: client,
        points: limitFor(setup.mode),
        duration: windowFor(setup.mode) / 1000,
      });
      return { call: (key) => limiter.consume(key), allowed: rlfAllowed, close: () => {} };
    }),
  '@fastify/rate-limit:redis': (setup) =>
    withRedis(setup, (client) => {
      const RedisStore = require('@fastify/rate-limit/store/RedisStore.js') as FastifyStoreClass;
      const max = limitFor(setup.mode);
      const store = new RedisStore(false, false, client, 'fastify-rate-limit-');
      return { call: viaPromise(store, setup.mode), allowed: counted(max), close: () => {} };
    }),
  'koa-ratelimit:redis': (setup) =>
    withRedis(setup, (client) => {
      const Limiter = require('koa-ratelimit/limiter/redis') as KoaLimiterClass;
      const max = limitFor(setup.mode);
      return {
        call: (id) => new Limiter({ id, db: client, max, duration: windowFor(setup.mode) }).get(),
        allowed: (r) => (r as { remaining: number }).remaining > 0,
        close: () => {},
      };
    }),
  /** The floor for any Redis limiter: one INCR round trip through the same client. */
  'ioredis-incr:redis': (setup) =>
    withRedis(setup, (client) => ({ call: (key) => client.incr(key), allowed: () => true, close: () => {} })),
};
