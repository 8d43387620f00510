import { createLimiter, isSluiceError } from '@sluice/core';
import { createRedisStore, DEFAULT_REDIS_PREFIX } from '@sluice/redis';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { connectRedis, waitReady } from '../helpers/redis-env.js';
import { freePort, hasRedisServer, type RedisServer, startRedisServer } from '../helpers/redis-server.js';

const codeOf = (run: () => unknown): string | undefined => {
  try {
    run();
  } catch (error) {
    return isSluiceError(error) ? error.code : `not a sluice error: ${String(error)}`;
  }
  return undefined;
};

describe('createRedisStore options', () => {
  const idle = new Redis({ lazyConnect: true, maxRetriesPerRequest: 0 });
  afterAll(() => idle.disconnect());

  it.each([undefined, null, {}, 'redis://127.0.0.1:6379', { defineCommand: () => {}, del: () => {} }])(
    'refuses client %o with ERR_SLUICE_INVALID_CLIENT',
    (client) => {
      expect(codeOf(() => createRedisStore({ client: client as never }))).toBe('ERR_SLUICE_INVALID_CLIENT');
    },
  );

  it('refuses a client keyPrefix holding a brace, which would move the hash tag', () => {
    const prefixed = new Redis({ lazyConnect: true, keyPrefix: '{app}:' });
    expect(codeOf(() => createRedisStore({ client: prefixed }))).toBe('ERR_SLUICE_INVALID_CLIENT');
    prefixed.disconnect();
  });

  it('refuses options that are not an object, and unknown options', () => {
    expect(codeOf(() => createRedisStore(undefined as never))).toBe('ERR_SLUICE_INVALID_OPTION');
    expect(codeOf(() => createRedisStore({ client: idle, keyPrefix: 'x' } as never))).toBe('ERR_SLUICE_UNKNOWN_OPTION');
  });

  it('refuses a deny cache given as a list, or given with localFirst, which ignores it (both were accepted)', async () => {
    expect(codeOf(() => createRedisStore({ client: idle, denyCache: [] as never }))).toBe('ERR_SLUICE_INVALID_OPTION');
    const localFirst = { syncIntervalMs: 60_000 };
    const both = { client: idle, localFirst, denyCache: { maxKeys: 10 } };
    expect(codeOf(() => createRedisStore(both))).toBe('ERR_SLUICE_INVALID_OPTION');
    const store = createRedisStore({ client: idle, localFirst, denyCache: false });
    await store.localFirst?.close();
  });

  it.each(['{tag}', 'a}', 'line\nbreak', 'x'.repeat(65), 5])(
    'refuses prefix %o with ERR_SLUICE_INVALID_PREFIX',
    (prefix) => {
      expect(codeOf(() => createRedisStore({ client: idle, prefix: prefix as string }))).toBe(
        'ERR_SLUICE_INVALID_PREFIX',
      );
    },
  );

  it('names itself redis and prefixes keys with sluice: unless told otherwise', () => {
    const store = createRedisStore({ client: idle });
    expect(store.name).toBe('redis');
    expect(store.prefix).toBe(DEFAULT_REDIS_PREFIX);
    expect(DEFAULT_REDIS_PREFIX).toBe('sluice:');
    expect(createRedisStore({ client: idle, prefix: '' }).prefix).toBe('');
    expect(store.local).toBeUndefined();
  });

  it('fails at once while the client is not connected, and never sends those calls later', async () => {
    const port = await freePort();
    const down = new Redis(port, '127.0.0.1', { retryStrategy: () => 50 });
    down.on('error', () => {});
    let server: RedisServer | undefined;
    try {
      const warnings: string[] = [];
      const limiter = createLimiter({
        limit: 5,
        window: '1s',
        store: createRedisStore({ client: down }),
        storeTimeoutMs: 5_000,
        onStoreError: 'deny',
        logger: { warn: (m) => warnings.push(m) },
      });
      const started = performance.now();
      const decisions = await Promise.all(Array.from({ length: 20 }, () => limiter.consume('k')));
      expect(performance.now() - started).toBeLessThan(100);
      for (const d of decisions) expect(d).toMatchObject({ allowed: false, reason: 'store-unavailable' });
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatch(/not ready/);
      if (!hasRedisServer()) return;
      // Once a Redis appears on that port and the client connects, nothing queued reaches it.
      server = await startRedisServer([], port);
      await waitReady(down, 5_000);
      const admin = await connectRedis(server.url);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(await admin.dbsize()).toBe(0);
      admin.disconnect();
    } finally {
      down.disconnect();
      await server?.stop();
    }
  });
});
