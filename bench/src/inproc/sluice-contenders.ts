import type { AlgorithmName, Decision, LimiterOptions, PolicyOptions, RateLimitStore } from '@sluice/core';
import { createLimiter } from '@sluice/core';
import { createMemoryStore } from '@sluice/memory';
import type { Redis } from 'ioredis';
import { type Contender, exportOf, limitFor, type Setup, windowFor } from './contender.js';
import { type Watcher, watch } from './watchers.js';

export type CreateRedisStore = (options: { client: Redis; prefix?: string }) => RateLimitStore;

/**
 * Three policies a real API might stack (per second, minute and hour), with limits no run
 * reaches, so the allowed path is measured; limit × window stays within sluice's 2^49 bound.
 */
export const threePolicies: readonly PolicyOptions[] = [
  { name: 'second', limit: 1e7, window: '1s' },
  { name: 'minute', limit: 1e8, window: '1m' },
  { name: 'hour', limit: 1e8, window: '1h' },
];

export function sluiceOptions(algorithm: AlgorithmName, setup: Setup, policyCount: 1 | 3): LimiterOptions {
  if (policyCount === 3) return { policies: threePolicies.map((p) => ({ ...p, algorithm })) };
  return { limit: limitFor(setup.mode), window: windowFor(setup.mode), algorithm };
}

/** The few client settings the benchmark varies. */
export interface ClientSettings {
  maxRetriesPerRequest?: number;
  enableAutoPipelining?: boolean;
}

/** A client of the bench's Redis. ioredis is loaded here, on first use: a memory cell's process never loads it (see `contenderFor`). */
export async function redisClient(setup: Setup, options: ClientSettings = {}): Promise<Redis> {
  if (setup.redisPort === undefined) throw new Error('this contender needs --redis-port');
  const { Redis: Client } = await import('ioredis');
  return new Client(setup.redisPort, '127.0.0.1', options);
}

/**
 * The client sluice's Redis store asks for: no re-sending of in-flight commands (a decision
 * must never count twice), optionally with ioredis auto-pipelining.
 */
export const sluiceClientOptions = (autoPipelining: boolean): ClientSettings => ({
  maxRetriesPerRequest: 0,
  enableAutoPipelining: autoPipelining,
});

/** `createLimiter` over `store`, called as a user calls it. */
export const decisionOf = (
  store: RateLimitStore,
  options: LimiterOptions,
  close: () => Promise<void> | void,
): Contender => {
  const limiter = createLimiter({ ...options, store });
  return {
    call: (key) => limiter.consume(key),
    allowed: (result, rejected) => {
      const decision = result as Decision;
      return rejected || decision.reason === 'store-unavailable' ? undefined : decision.allowed;
    },
    close,
  };
};

/** `createLimiter` over `createMemoryStore()`, the embedded default, with its decisions watched or not. */
export async function sluiceMemory(
  algorithm: AlgorithmName,
  setup: Setup,
  policyCount: 1 | 3,
  watcher: Watcher = 'none',
): Promise<Contender> {
  const unwatch = await watch(watcher);
  return decisionOf(
    createMemoryStore({ maxKeys: setup.maxKeys }),
    sluiceOptions(algorithm, setup, policyCount),
    unwatch,
  );
}

/** `createLimiter` over `createRedisStore({ client })`. */
export async function sluiceRedis(
  algorithm: AlgorithmName,
  setup: Setup,
  policyCount: 1 | 3,
  autoPipelining: boolean,
): Promise<Contender> {
  const createRedisStore = await exportOf<CreateRedisStore>('@sluice/redis', 'createRedisStore');
  const client = await redisClient(setup, sluiceClientOptions(autoPipelining));
  await client.ping();
  return decisionOf(createRedisStore({ client }), sluiceOptions(algorithm, setup, policyCount), () =>
    client.disconnect(),
  );
}
