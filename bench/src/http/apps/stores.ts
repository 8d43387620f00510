import type { RateLimitStore } from '@sluice/core';
import { createMemoryStore } from '@sluice/memory';
import { Redis } from 'ioredis';
import { exportOf } from '../../inproc/contender.js';
import { type ClientSettings, type CreateRedisStore, sluiceClientOptions } from '../../inproc/sluice-contenders.js';
import type { AppSetup } from './app.js';

/** An ioredis client on the private benchmark server; the app closes it on shutdown. */
export function benchRedis(setup: AppSetup, settings: ClientSettings = {}): Redis {
  if (setup.redisPort === undefined) throw new Error('a Redis variant needs --redis-port');
  return new Redis(setup.redisPort, '127.0.0.1', settings);
}

/** The sluice store a variant names, with a closer for what it opened. */
export async function sluiceStore(setup: AppSetup): Promise<{ store: RateLimitStore; close: () => void }> {
  if (setup.variant === 'sluice:memory') return { store: createMemoryStore(), close: () => {} };
  const createRedisStore = await exportOf<CreateRedisStore>('@sluice/redis', 'createRedisStore');
  const client = benchRedis(setup, sluiceClientOptions(false));
  // A decision asked before the connection is ready would fail open and measure nothing.
  await client.ping();
  return { store: createRedisStore({ client }), close: () => client.disconnect() };
}

/** The `round-trip:redis` control's one command per request, and a closer for its client. */
export async function redisRoundTrip(
  setup: AppSetup,
): Promise<{ roundTrip: (key: string) => Promise<unknown>; close: () => void }> {
  const client = benchRedis(setup, { enableAutoPipelining: true });
  await client.ping();
  return { roundTrip: (key) => client.incr(`round-trip:${key}`), close: () => client.disconnect() };
}
