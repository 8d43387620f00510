import type { RateLimitStore } from '@sluice/core';
import { createMemoryStore } from '@sluice/memory';
import type { createRedisStore as CreateRedisStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import { exportOf } from '../../inproc/contender.js';
import { type ClientSettings, sluiceClientOptions } from '../../inproc/sluice-contenders.js';
import { type AppSetup, LOCAL_FIRST_REDIS, MEMORY_BESIDE_IDLE_CLIENT } from './app.js';

/** An ioredis client on the private benchmark server; the app closes it on shutdown. */
export function benchRedis(setup: AppSetup, settings: ClientSettings = {}): Redis {
  if (setup.redisPort === undefined) throw new Error('a Redis variant needs --redis-port');
  return new Redis(setup.redisPort, '127.0.0.1', { ...settings, db: setup.redisDb });
}

/** The sluice variants: memory, exact Redis, local-first Redis, and memory beside an idle Redis client. */
export const isSluiceStore = (variant: string): boolean =>
  variant === 'sluice:memory' ||
  variant === 'sluice:redis' ||
  variant === LOCAL_FIRST_REDIS ||
  variant === MEMORY_BESIDE_IDLE_CLIENT;

/** The sluice store a variant names, with a closer for what it opened. */
export async function sluiceStore(setup: AppSetup): Promise<{ store: RateLimitStore; close: () => Promise<void> }> {
  if (setup.variant === 'sluice:memory') return { store: createMemoryStore(), close: async () => {} };
  const client = benchRedis(setup, sluiceClientOptions(false));
  // A decision asked before the connection is ready would fail open and measure nothing.
  await client.ping();
  if (setup.variant === MEMORY_BESIDE_IDLE_CLIENT) {
    // Connected as the Redis store's client is, then never asked anything.
    return { store: createMemoryStore(), close: async () => client.disconnect() };
  }
  const createRedisStore = await exportOf<typeof CreateRedisStore>('@sluice/redis', 'createRedisStore');
  const localFirst = setup.variant === LOCAL_FIRST_REDIS ? { localFirst: { syncIntervalMs: 50 } } : {};
  const store = createRedisStore({ client, ...localFirst });
  return {
    store,
    // Local-first: stop the sync timer, with its last sync, before the client goes.
    close: async () => {
      await store.localFirst?.close().catch(() => {});
      client.disconnect();
    },
  };
}

/**
 * The `round-trip:redis` control's one command per request, answering the client's count, and
 * a closer for its client.
 */
export async function redisRoundTrip(
  setup: AppSetup,
): Promise<{ roundTrip: (key: string) => Promise<number>; close: () => void }> {
  const client = benchRedis(setup, { enableAutoPipelining: true });
  await client.ping();
  return { roundTrip: (key) => client.incr(`round-trip:${key}`), close: () => client.disconnect() };
}
