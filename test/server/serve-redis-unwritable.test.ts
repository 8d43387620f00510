import { clientSlot } from '@sluice/redis';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectCluster, startMastersCluster } from '../helpers/redis-cluster.js';
import { isCi } from '../helpers/redis-env.js';
import { hasRedisServer, type RedisServer, startRedisServer, waitFor } from '../helpers/redis-server.js';
import { exitOf, startSluice } from '../helpers/sluice-process.js';

const rules = new URL('./fixtures/edge.yaml', import.meta.url).pathname;
const skip = !hasRedisServer() && !isCi;

/** `sluice serve` on a Redis (`--redis <url>` or `--redis-cluster <nodes>`), as far as start-up goes: its exit code and what it wrote. */
const serveOn = (...redis: string[]) =>
  exitOf(['serve', '--rules', rules, ...redis, '--grpc-port', '0', '--http-port', '0']);

// Regression: a Redis that answers a connection and a ping but cannot decide (a read-only
// replica, a user whose ACL forbids a command the scripts run) started a service that reported
// SERVING and failed every call with 503.
describe.skipIf(skip)('sluice serve on a Redis that answers but cannot decide', () => {
  let master: RedisServer;
  let replica: RedisServer;
  beforeAll(async () => {
    master = await startRedisServer();
    replica = await startRedisServer(['--replicaof', '127.0.0.1', String(master.port)]);
  });
  afterAll(async () => {
    await replica?.stop();
    await master?.stop();
  });

  it('exits 1 on a read-only replica, saying so', async () => {
    const { code, output } = await serveOn('--redis', replica.url);
    expect(code).toBe(1);
    expect(output).toContain('ERR_SLUICE_STORE_CONNECT');
    expect(output).toContain('READONLY');
  });

  it('exits 1 for a user the ACL denies a command the scripts run (TIME), naming the script error', async () => {
    const locked = await startRedisServer(['--user', 'sluice', 'on', '>pw', '~*', '+@all', '-time']);
    try {
      const { code, output } = await serveOn('--redis', `redis://sluice:pw@127.0.0.1:${locked.port}`);
      expect(code).toBe(1);
      expect(output).toContain('ERR_SLUICE_STORE_CONNECT');
      expect(output).toContain("can't run this command");
    } finally {
      await locked.stop();
    }
  });

  // Regression: health's look at the store was a cost-0 look, which writes nothing: once the
  // Redis became a replica it answered, so health went back to SERVING within 2 s while every
  // call failed, and a readiness probe put the service back in rotation.
  it('stays NOT_SERVING while the Redis it serves on is a replica, and serves again once it is a master', async () => {
    const served = await startRedisServer();
    const other = await startRedisServer();
    const sluice = await startSluice(['--rules', rules, '--redis', served.url]);
    const admin = new Redis(served.port, '127.0.0.1', { maxRetriesPerRequest: 0 });
    const healthy = async () => (await fetch(`${sluice.httpUrl}/healthcheck`)).ok;
    const decide = () =>
      fetch(`${sluice.httpUrl}/json`, {
        method: 'POST',
        body: JSON.stringify({ domain: 'edge', descriptors: [{ entries: [{ key: 'exact', value: 'replica' }] }] }),
      });
    try {
      expect((await decide()).status).toBe(200);
      await admin.replicaof('127.0.0.1', other.port);
      // Redis's own error (READONLY, and the script's id) is the service's log's, not the caller's.
      const refused = await decide();
      expect([refused.status, await refused.json()]).toEqual([
        503,
        { code: 'UNAVAILABLE', message: 'the rate-limit store failed; the service logged why' },
      ]);
      expect(await healthy()).toBe(false);
      // Past the 2 s the service waits, with no call failing, before it reads a look as up.
      for (let second = 0; second < 4; second++) {
        await new Promise((resolve) => setTimeout(resolve, 1000));
        expect(await healthy()).toBe(false);
      }
      await admin.replicaof('NO', 'ONE');
      await waitFor('SERVING once it is a master again', healthy);
      expect((await decide()).status).toBe(200);
    } finally {
      admin.disconnect();
      await sluice.kill();
      await served.stop();
      await other.stop();
    }
  }, 30_000);

  // Regression: on a Cluster the check wrote on the master of its one key only, and ACLs and
  // memory limits are set node by node: a master out of memory elsewhere started a service
  // that failed the calls of its slots.
  it('exits 1 on a Cluster when any master cannot decide, not only the one its first key lives on', async () => {
    const handle = await startMastersCluster();
    const cluster = await connectCluster(handle.nodes, { redisOptions: { maxRetriesPerRequest: 0 } });
    try {
      const checkedBefore = cluster.slots[clientSlot('sluice-start', 'start')]?.[0];
      const elsewhere = cluster
        .nodes('master')
        .find((node) => `${node.options.host}:${node.options.port}` !== checkedBefore);
      await elsewhere?.config('SET', 'maxmemory', '1');
      await elsewhere?.config('SET', 'maxmemory-policy', 'noeviction');
      const nodes = handle.nodes.map((n) => `${n.host}:${n.port}`).join(',');
      const { code, output } = await serveOn('--redis-cluster', nodes);
      expect(code).toBe(1);
      expect(output).toContain('ERR_SLUICE_STORE_CONNECT');
      expect(output).toContain('OOM');
    } finally {
      cluster.disconnect();
      await handle.stop();
    }
  }, 60_000);
});
