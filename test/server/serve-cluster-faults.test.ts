import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { clientSlot } from '@sluice/redis';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnvoyClient } from '../helpers/envoy-client.js';
import { type RedisClusterHandle, startRedisCluster } from '../helpers/redis-cluster.js';
import { isCi } from '../helpers/redis-env.js';
import { hasRedisServer, waitFor } from '../helpers/redis-server.js';
import { type ServingSluice, startSluice } from '../helpers/sluice-process.js';

const rules = new URL('./fixtures/edge.yaml', import.meta.url).pathname;
const skip = !hasRedisServer() && !isCi;

/** The port of a master that does not serve `slot`. */
async function masterWithout(port: number, slot: number): Promise<number> {
  const node = new Redis(port, '127.0.0.1');
  try {
    const ranges = await node.cluster('SLOTS');
    const other = ranges.find(([from, to]) => slot < from || slot > to);
    const port = other?.[2]?.[1];
    if (port === undefined) throw new Error('every range holds the slot');
    return port;
  } finally {
    node.disconnect();
  }
}

/** Every node of the cluster, told `CLIENT <args>`. */
const toEveryNode = (cluster: RedisClusterHandle, ...args: string[]) =>
  Promise.all(cluster.nodes.map((n) => promisify(execFile)('redis-cli', ['-p', String(n.port), 'client', ...args])));

// A cluster of its own: its masters are paused, and one is shut down, here.
describe.skipIf(skip)('sluice serve --redis-cluster when masters stall or fail', () => {
  let cluster: RedisClusterHandle;
  let sluice: ServingSluice;
  beforeAll(async () => {
    cluster = await startRedisCluster();
    const nodes = cluster.nodes.map((n) => `${n.host}:${n.port}`).join(',');
    sluice = await startSluice(['--rules', rules, '--redis-cluster', nodes, '--store-timeout-ms', '500']);
  }, 60_000);
  afterAll(async () => {
    await sluice?.kill();
    await cluster?.stop();
  });

  it('stops sending to a stalled master as a whole: calls to its other slots, answered UNAVAILABLE, no longer spend quota when it resumes', async () => {
    const envoy = createEnvoyClient(sluice.grpcAddress);
    const ask = (value: string) =>
      envoy.shouldRateLimit({ domain: 'edge', descriptors: [{ entries: [{ key: 'exact', value }] }] }).then(
        (response) => response.statuses?.[0]?.limit_remaining ?? -1,
        () => 'UNAVAILABLE' as const,
      );
    const clients = (name: string, count: number) =>
      Array.from({ length: count }, (_, i) => `${name}-${i}-${process.pid}`);
    try {
      // WRITE: sluice's scripts wait, and CLIENT UNPAUSE below does not.
      await toEveryNode(cluster, 'pause', '20000', 'WRITE');
      // Sent to every master, then given up on after the store timeout: each master stalls.
      expect(new Set(await Promise.all(clients('first', 24).map(ask)))).toEqual(new Set(['UNAVAILABLE']));
      // The store counts a call's wait in the time its process was idle, so a server slowed by
      // other work (the suites running beside it) may not yet take its masters for stalled;
      // 250 ms past a call's timeout it does, whatever the load (the stall guard's BUSY_GRACE_MS).
      await new Promise((resolve) => setTimeout(resolve, 300));
      // Clients in slots no call has gone to yet, on the masters that stall.
      const later = clients('later', 60);
      expect(new Set(await Promise.all(later.map(ask)))).toEqual(new Set(['UNAVAILABLE']));
      await toEveryNode(cluster, 'unpause');
      await waitFor('SERVING once the masters answer', async () => (await fetch(`${sluice.httpUrl}/healthcheck`)).ok);
      // Each of them charged now, once; charged during the stall too, it would have 98 left. A
      // master whose backlog is still being read answers UNAVAILABLE a little longer, charging
      // nothing (its calls are held back): asked again until it decides.
      const decided = async (value: string) => {
        for (let i = 0; i < 50; i++) {
          const left = await ask(value);
          if (left !== 'UNAVAILABLE') return left;
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        return 'UNAVAILABLE';
      };
      const remaining = await Promise.all(later.map(decided));
      const chargedDuringStall = remaining.filter((left) => left !== 99);
      // One call a second may look whether a master answers again: none is due this soon.
      expect(chargedDuringStall.length).toBeLessThanOrEqual(3);
    } finally {
      await toEveryNode(cluster, 'unpause');
      envoy.close();
    }
  }, 60_000);

  it("stays NOT_SERVING while calls to it fail, though the health look's own key answers (it flapped every second)", async () => {
    const envoy = createEnvoyClient(sluice.grpcAddress);
    const health = () => fetch(`${sluice.httpUrl}/healthcheck`).then((r) => r.status);
    // Clients spread over every master, as a busy service's are.
    const round = (n: number) =>
      Promise.all(
        Array.from({ length: 24 }, (_, i) =>
          envoy
            .shouldRateLimit({
              domain: 'edge',
              descriptors: [{ entries: [{ key: 'exact', value: `c${n}-${i}-${process.pid}` }] }],
            })
            .then(
              () => 'OK',
              () => 'UNAVAILABLE',
            ),
        ),
      );
    try {
      expect(new Set(await round(0))).toEqual(new Set(['OK']));
      const probeSlot = clientSlot('sluice-health', 'probe');
      const down = await masterWithout(cluster.nodes[0]?.port as number, probeSlot);
      await promisify(execFile)('redis-cli', ['-p', String(down), 'shutdown', 'nosave']).catch(() => {});
      let n = 1;
      await waitFor('a call to fail', async () => (await round(n++)).includes('UNAVAILABLE'));
      await waitFor('NOT_SERVING', async () => (await health()) === 503);
      // Well within the cluster's failover (node timeout 3 s): calls to the dead master keep failing.
      const seen = new Set<number>();
      const until = performance.now() + 2500;
      while (performance.now() < until) {
        await round(n++);
        seen.add(await health());
      }
      expect([...seen]).toEqual([503]);
      // A replica takes over; once calls have answered for a while the service serves again.
      await waitFor(
        'SERVING after failover',
        async () => {
          await round(n++);
          return (await health()) === 200;
        },
        30_000,
      );
    } finally {
      envoy.close();
    }
  }, 60_000);
});
