import { randomUUID } from 'node:crypto';
import { createLimiter } from '@sluice/core';
import { createRedisStore } from '@sluice/redis';
import { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clusterTarget, connectCluster, type RedisClusterHandle } from '../helpers/redis-cluster.js';
import { deleteKeys, waitReady } from '../helpers/redis-env.js';
import { type RedisProxy, startRedisProxy } from '../helpers/redis-proxy.js';

const target = clusterTarget();

describe.skipIf(target.skip)('a Redis Cluster with one master silent', () => {
  const prefix = `sluice-test:${randomUUID()}:`;
  let handle: RedisClusterHandle | undefined;
  let admin: Cluster | undefined;
  let client: Cluster | undefined;
  let proxy: RedisProxy | undefined;

  beforeAll(async () => {
    handle = await target.require()();
    admin = await connectCluster(handle.nodes);
    // One master is reached only through a proxy, which this client alone uses.
    const master = admin.nodes('master')[0]?.options as { host: string; port: number };
    proxy = await startRedisProxy(master.port);
    client = new Cluster(handle.nodes, {
      retryDelayOnFailover: 0,
      retryDelayOnTryAgain: 0,
      retryDelayOnClusterDown: 0,
      natMap: { [`${master.host}:${master.port}`]: { host: '127.0.0.1', port: proxy.port } },
    });
    client.on('error', () => {});
    await waitReady(client, 15_000);
  }, 120_000);

  afterAll(async () => {
    proxy?.forward();
    client?.disconnect();
    if (admin !== undefined) {
      await Promise.all(admin.nodes('master').map((node) => deleteKeys(node, prefix)));
      admin.disconnect();
    }
    await proxy?.close();
    await handle?.stop();
  });

  // With one master down, the others still answered, and every failure after a success was
  // logged as a new outage: 908 to 940 warnings per limiter in 3 s.
  it('logs one warning for the outage, not one per failure', async () => {
    const warnings: string[] = [];
    const limiter = createLimiter({
      limit: 1000,
      window: '1h',
      store: createRedisStore({ client: client as Cluster, prefix }),
      storeTimeoutMs: 30,
      logger: { warn: (message) => warnings.push(message) },
    });
    (proxy as RedisProxy).silence();
    const reasons: (string | undefined)[] = [];
    // Keys spread over every master: some decisions reach the silent one, most do not.
    for (let round = 0; round < 20; round++) {
      const decisions = await Promise.all(
        Array.from({ length: 30 }, (_, i) => limiter.consume(`client-${round}-${i}`)),
      );
      reasons.push(...decisions.map((d) => d.reason));
    }
    expect(reasons.filter((r) => r === 'store-unavailable').length).toBeGreaterThan(20);
    expect(reasons.filter((r) => r === undefined).length).toBeGreaterThan(20);
    expect(warnings.filter((w) => w.includes('WRN_SLUICE_STORE_UNAVAILABLE'))).toHaveLength(1);
    expect(warnings.filter((w) => w.includes('WRN_SLUICE_STORE_RECOVERED'))).toHaveLength(0);
  }, 60_000);
});
