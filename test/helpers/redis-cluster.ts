import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Cluster, Redis } from 'ioredis';
import { isCi, type RedisTarget, redisTarget, waitReady } from './redis-env.js';
import { hasRedisServer, type RedisServer, startRedisServer, waitFor } from './redis-server.js';

export interface ClusterNode {
  host: string;
  port: number;
}

export interface RedisClusterHandle {
  nodes: ClusterNode[];
  /** Stops the nodes this process started; a cluster named by REDIS_CLUSTER_NODES is left alone. */
  stop(): Promise<void>;
}

/**
 * The cluster the suites run on: `REDIS_CLUSTER_NODES` (`host:port,…`, as scripts/redis-up.sh
 * exports it) when set, or else one started here. Starting takes a few seconds, so call
 * `start()` in `beforeAll`.
 */
export function clusterTarget(): RedisTarget<() => Promise<RedisClusterHandle>> {
  const listed = process.env.REDIS_CLUSTER_NODES;
  if (listed) {
    const nodes = listed.split(',').map((entry) => {
      const [host = '127.0.0.1', port = ''] = entry.trim().split(':');
      return { host, port: Number(port) };
    });
    return redisTarget('Redis Cluster', async () => ({ nodes, stop: async () => {} }));
  }
  if (!hasRedisServer()) {
    return redisTarget<() => Promise<RedisClusterHandle>>(
      'Redis Cluster',
      undefined,
      'REDIS_CLUSTER_NODES is unset and redis-server is not installed',
    );
  }
  return redisTarget('Redis Cluster', startRedisCluster);
}

/** Three masters with one replica each on spare loopback ports, ready once every node sees them all and `cluster_state:ok`. */
export async function startRedisCluster(): Promise<RedisClusterHandle> {
  const servers: RedisServer[] = [];
  try {
    for (let i = 0; i < 6; i++) {
      servers.push(
        await startRedisServer([
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          'nodes.conf',
          '--cluster-node-timeout',
          '3000',
        ]),
      );
    }
    const addresses = servers.map((s) => `127.0.0.1:${s.port}`);
    await promisify(execFile)(
      'redis-cli',
      ['--cluster', 'create', ...addresses, '--cluster-replicas', '1', '--cluster-yes'],
      {
        timeout: 30_000,
      },
    );
    for (const server of servers) {
      const node = new Redis(server.port, '127.0.0.1', { lazyConnect: true });
      try {
        await waitFor(
          `cluster_state:ok and three replicas seen from ${server.port}`,
          async () => {
            const info = (await node.cluster('INFO')) as string;
            const flags = ((await node.cluster('NODES')) as string)
              .trim()
              .split('\n')
              .map((line) => line.split(' ')[2] ?? '');
            return info.includes('cluster_state:ok') && flags.filter((f) => f.includes('slave')).length === 3;
          },
          30_000,
        );
      } finally {
        node.disconnect();
      }
    }
  } catch (error) {
    await Promise.all(servers.map((s) => s.stop()));
    throw error;
  }
  return {
    nodes: servers.map((s) => ({ host: '127.0.0.1', port: s.port })),
    stop: async () => {
      await Promise.all(servers.map((s) => s.stop()));
    },
  };
}

/** A connected Cluster client; fails rather than hangs if the cluster is not ready in time. */
export async function connectCluster(
  nodes: ClusterNode[],
  options: ConstructorParameters<typeof Cluster>[1] = {},
): Promise<Cluster> {
  const cluster = new Cluster(nodes, { retryDelayOnFailover: 0, ...options });
  cluster.on('error', () => {});
  await waitReady(cluster, isCi ? 30_000 : 15_000);
  return cluster;
}
