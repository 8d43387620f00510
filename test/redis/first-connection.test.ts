import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:net';
import { createLimiter, type Limiter } from '@sluice/core';
import { createRedisStore } from '@sluice/redis';
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clusterTarget, type RedisClusterHandle } from '../helpers/redis-cluster.js';
import { connectRedis, deleteKeys, standaloneRedis } from '../helpers/redis-env.js';
import { proxiedRedisForSuite } from '../helpers/redis-proxy.js';

const standalone = await standaloneRedis();
const cluster = clusterTarget();
const NOW = 1_700_000_000_000;

/** Asks 300 decisions the moment the client is made, before it has connected. */
async function burstOnFreshClient(client: Redis | Cluster, prefix: string) {
  const limiter = createLimiter({
    limit: 100,
    window: '1m',
    clock: () => NOW,
    storeTimeoutMs: 10_000,
    store: createRedisStore({ client, prefix, logger: { warn: () => {} } }),
  });
  expect(client.status).not.toBe('ready');
  const decisions = await Promise.all(Array.from({ length: 300 }, () => limiter.consume('client')));
  return {
    allowed: decisions.filter((d) => d.allowed).length,
    unavailable: decisions.filter((d) => d.reason === 'store-unavailable').length,
  };
}

describe.skipIf(standalone.skip)(
  "a new client's first requests used to fail open (300 of 300 allowed, limit 100)",
  () => {
    const prefix = `sluice-test:${randomUUID()}:`;
    const clients: Redis[] = [];
    const fresh = (options: { lazyConnect?: boolean } = {}) => {
      const client = new Redis(standalone.require() as string, { maxRetriesPerRequest: 0, ...options });
      client.on('error', () => {});
      clients.push(client);
      return client;
    };
    afterAll(async () => {
      if (clients[0]) await deleteKeys(clients[0], prefix);
      for (const client of clients) client.disconnect();
    });

    it('decisions asked while ioredis connects wait for the connection', async () => {
      expect(await burstOnFreshClient(fresh(), `${prefix}eager:`)).toEqual({ allowed: 100, unavailable: 0 });
    });

    it('a lazyConnect client is connected by its first decision, which waits too', async () => {
      expect(await burstOnFreshClient(fresh({ lazyConnect: true }), `${prefix}lazy:`)).toEqual({
        allowed: 100,
        unavailable: 0,
      });
    });
  },
);

describe.skipIf(cluster.skip)("a new Cluster client's first requests", () => {
  const prefix = `sluice-test:${randomUUID()}:`;
  let handle: RedisClusterHandle | undefined;
  let client: Cluster | undefined;
  beforeAll(async () => {
    handle = await cluster.require()();
  }, 120_000);
  afterAll(async () => {
    if (client) {
      await Promise.all(client.nodes('master').map((node) => deleteKeys(node, prefix)));
      client.disconnect();
    }
    await handle?.stop();
  });

  it('wait for the cluster connection instead of failing open', async () => {
    client = new Cluster((handle as RedisClusterHandle).nodes, {
      retryDelayOnFailover: 0,
      retryDelayOnTryAgain: 0,
      retryDelayOnClusterDown: 0,
    });
    client.on('error', () => {});
    expect(await burstOnFreshClient(client, prefix)).toEqual({ allowed: 100, unavailable: 0 });
  });
});

describe('during an outage decisions still fail fast', () => {
  let server: Server;
  let port: number;
  beforeAll(async () => {
    // A port that accepts and at once closes every connection: a Redis that is down.
    server = createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as { port: number }).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('once the first attempt has failed, a decision gets the fail policy without waiting out the timeout', async () => {
    const client = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 0, retryStrategy: () => 50 });
    client.on('error', () => {});
    try {
      const limiter = createLimiter({
        limit: 1,
        window: '1m',
        // Far beyond the test's own timeout: a decision that waited for it would fail the test.
        storeTimeoutMs: 600_000,
        logger: { warn: () => {} },
        store: createRedisStore({ client, logger: { warn: () => {} } }),
      });
      const first = await limiter.consume('k');
      expect(first).toMatchObject({ allowed: true, reason: 'store-unavailable' });
      const later = await Promise.all(Array.from({ length: 5 }, () => limiter.consume('k')));
      for (const decision of later) expect(decision.reason).toBe('store-unavailable');
    } finally {
      client.disconnect();
    }
  });
});

describe.skipIf(standalone.skip)('calls a limiter gave up on while the first connection opened', () => {
  const redis = proxiedRedisForSuite(standalone);
  const quiet = { warn: () => {} };
  const options = { limit: 5, window: '1m', clock: () => NOW, prefix: 'p', logger: quiet } as const;

  /**
   * A client charged once on a connection of its own (`counting`), and a store on a client whose
   * first connection is held back until `open()`, which resolves once whatever that client still
   * had to send has gone before two pings on the same connection.
   */
  async function lateConnection() {
    const prefix = `late-${randomUUID()}:`;
    const direct = await connectRedis(redis.server.url);
    redis.proxy.hold();
    const client = new Redis(redis.proxy.port, '127.0.0.1', { maxRetriesPerRequest: 0 });
    client.on('error', () => {});
    const counting = createLimiter({ ...options, store: createRedisStore({ client: direct, prefix }) });
    expect((await counting.consume('k')).remaining).toBe(4);
    return {
      counting,
      store: createRedisStore({ client, prefix, logger: quiet }),
      async open() {
        const ready = new Promise((resolve) => client.once('ready', resolve));
        redis.proxy.release();
        await ready;
        await client.ping();
        await client.ping();
      },
      async close() {
        redis.proxy.forward();
        client.disconnect();
        await deleteKeys(direct, prefix);
        direct.disconnect();
      },
    };
  }

  // They were all sent once the connection opened: a request refused under onStoreError
  // 'deny' was charged too, and a reset reported failed still wiped the count.
  it('are sent only where the fail policy took them as done', async () => {
    const late = await lateConnection();
    try {
      const [allowing, denying, throwing] = (['allow', 'deny', 'throw'] as const).map((onStoreError) =>
        createLimiter({ ...options, store: late.store, storeTimeoutMs: 50, onStoreError }),
      ) as [Limiter, Limiter, Limiter];
      // Let through by 'allow': counted once the connection opens, as it was served.
      expect(await allowing.consume('k')).toMatchObject({ allowed: true, reason: 'store-unavailable' });
      // Refused by 'deny', or reported failed by 'throw': never sent.
      expect(await denying.consume('k')).toMatchObject({ allowed: false, reason: 'store-unavailable' });
      await expect(throwing.consume('k')).rejects.toMatchObject({ code: 'ERR_SLUICE_STORE_TIMEOUT' });
      await expect(throwing.refund('k', 1)).rejects.toMatchObject({ code: 'ERR_SLUICE_STORE_TIMEOUT' });
      await expect(throwing.reset('k')).rejects.toMatchObject({ code: 'ERR_SLUICE_STORE_TIMEOUT' });
      await late.open();
      expect((await late.counting.peek('k')).remaining).toBe(3);
      // Asked now, the late connection decides as any other.
      expect((await denying.consume('k')).remaining).toBe(2);
    } finally {
      await late.close();
    }
  });

  it('a reset that no error reported is made once the connection opens', async () => {
    const late = await lateConnection();
    try {
      // Under 'deny' a reset that fails resolves: its caller takes it as made.
      await createLimiter({ ...options, store: late.store, storeTimeoutMs: 50, onStoreError: 'deny' }).reset('k');
      await late.open();
      expect((await late.counting.peek('k')).remaining).toBe(5);
    } finally {
      await late.close();
    }
  });
});
