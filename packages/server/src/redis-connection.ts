import { SluiceError } from '@sluice/core';
import { createRedisStore } from '@sluice/redis';
import { Cluster, Redis } from 'ioredis';
import type { ServiceLog } from './log.js';

export interface RedisConnection {
  store: ReturnType<typeof createRedisStore>;
  /** Calls `onChange(false)` when the connection drops and `onChange(true)` when it is ready again. */
  watch(onChange: (up: boolean) => void): void;
  close(): Promise<void>;
}

/** How long start-up waits for Redis before giving up with a clear message. */
const CONNECT_TIMEOUT_MS = 5000;
/** Between reconnection attempts once started: quick at first, then every 2 s, for ever. */
const retryDelay = (attempt: number): number => Math.min(attempt * 200, 2000);

/**
 * Connects before the service starts serving, so an unreachable Redis stops start-up with a
 * clear message. Once connected, ioredis reconnects for ever; commands fail at once while it
 * is away (no offline queue), so calls fail fast with UNAVAILABLE instead of piling up.
 */
export async function connectRedis(
  target: { url: string } | { nodes: { host: string; port: number }[] },
  log: ServiceLog,
): Promise<RedisConnection> {
  const client =
    'url' in target
      ? new Redis(target.url, {
          lazyConnect: true,
          enableOfflineQueue: false,
          maxRetriesPerRequest: 0,
          retryStrategy: retryDelay,
        })
      : new Cluster(target.nodes, {
          lazyConnect: true,
          enableOfflineQueue: false,
          clusterRetryStrategy: retryDelay,
          redisOptions: { maxRetriesPerRequest: 0 },
        });
  const where = 'url' in target ? target.url : target.nodes.map((n) => `${n.host}:${n.port}`).join(',');
  // Until start-up is over, errors reject `connect()`; later ones are reported through health.
  let lastError: string | undefined;
  client.on('error', (error: Error) => {
    lastError = error.message;
  });
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      client.connect(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${CONNECT_TIMEOUT_MS} ms`)), CONNECT_TIMEOUT_MS);
      }),
    ]);
    await client.ping();
  } catch (cause) {
    client.disconnect();
    throw new SluiceError(
      'ERR_SLUICE_STORE_CONNECT',
      `[sluice] Cannot reach Redis at ${where}: ${lastError ?? (cause instanceof Error ? cause.message : String(cause))}`,
      { cause },
    );
  } finally {
    clearTimeout(timer);
  }
  log.line('info', 'connected to Redis', { redis: where });
  return {
    store: createRedisStore({ client }),
    watch(onChange) {
      client.on('ready', () => onChange(true));
      client.on('close', () => onChange(false));
      client.on('end', () => onChange(false));
    },
    async close() {
      client.removeAllListeners('ready');
      client.removeAllListeners('close');
      client.removeAllListeners('end');
      await client.quit().catch(() => client.disconnect());
    },
  };
}
