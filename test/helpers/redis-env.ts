import { Redis } from 'ioredis';

/** Under CI the Redis suites must run: a missing Redis fails them instead of skipping them. */
export const isCi = process.env.CI === 'true';

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Whether a suite runs, and why not when it doesn't. */
export interface RedisTarget<T> {
  /** Present when Redis answered. */
  value: T | undefined;
  /** True when the suite should skip: nothing reachable and not under CI. */
  skip: boolean;
  /** Call in `beforeAll`: returns the value, or throws (under CI) when there is none. */
  require(): T;
}

/**
 * Checks once whether something answers, and decides how a suite behaves without it: skip
 * with a loud notice on a developer's machine, fail under `CI=true`.
 */
export function redisTarget<T>(what: string, value: T | undefined, reason = ''): RedisTarget<T> {
  if (value === undefined && !isCi) {
    console.warn(
      `\n!!! SKIPPING the ${what} suites: ${reason || 'nothing answered'}. Run \`source scripts/redis-up.sh\` first. !!!\n`,
    );
  }
  return {
    value,
    skip: value === undefined && !isCi,
    require() {
      if (value === undefined) {
        throw new Error(`${what} is required under CI=true but ${reason || 'nothing answered'}.`);
      }
      return value;
    },
  };
}

/** The standalone Redis of `REDIS_URL` (default 127.0.0.1:6379), if it answers PING. */
export async function standaloneRedis(): Promise<RedisTarget<string>> {
  const client = new Redis(REDIS_URL, { lazyConnect: true, connectTimeout: 1000, retryStrategy: () => null });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.ping();
    return redisTarget('Redis', REDIS_URL);
  } catch (error) {
    return redisTarget<string>('Redis', undefined, `no Redis at ${REDIS_URL} (${(error as Error).message})`);
  } finally {
    client.disconnect();
  }
}

/** A connected client; rejects if it is not ready within `timeoutMs`. */
export async function connectRedis(
  url: string,
  options: { enableAutoPipelining?: boolean } = {},
  timeoutMs = 5000,
): Promise<Redis> {
  const client = new Redis(url, {
    enableAutoPipelining: options.enableAutoPipelining ?? false,
    maxRetriesPerRequest: 0,
  });
  client.on('error', () => {});
  await waitReady(client, timeoutMs);
  return client;
}

export function waitReady(client: { status: string; once(event: string, fn: () => void): unknown }, timeoutMs: number) {
  if (client.status === 'ready') return Promise.resolve();
  return new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`client not ready after ${timeoutMs} ms`)), timeoutMs);
    client.once('ready', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/** Deletes every key under `prefix` on one node (tests use a unique prefix each). */
export async function deleteKeys(client: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', `${escapeGlob(prefix)}*`, 'COUNT', 1000);
    cursor = next;
    for (const key of keys) await client.del(key);
  } while (cursor !== '0');
}

export const escapeGlob = (text: string): string => text.replace(/[*?[\]\\]/g, '\\$&');
