import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect } from 'node:tls';
import { promisify } from 'node:util';
import { clientSlot } from '@sluice/redis';
import { Cluster, Redis } from 'ioredis';
import { isCi, type RedisTarget, redisTarget, waitReady } from './redis-env.js';
import { freePort, hasRedisServer, type RedisServer, startRedisServer, waitFor } from './redis-server.js';

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

/**
 * The cluster the nodes `setUp` starts (pushing each into `servers`) form; should it fail, every
 * node started so far is stopped.
 */
async function formCluster(setUp: (servers: RedisServer[]) => Promise<void>): Promise<RedisClusterHandle> {
  const servers: RedisServer[] = [];
  const stopAll = async () => {
    await Promise.all(servers.map((s) => s.stop()));
  };
  try {
    await setUp(servers);
  } catch (error) {
    await stopAll();
    throw error;
  }
  return { nodes: servers.map((s) => ({ host: '127.0.0.1', port: s.port })), stop: stopAll };
}

/** Three masters with one replica each on spare loopback ports, ready once every node sees them all and `cluster_state:ok`. */
export async function startRedisCluster(): Promise<RedisClusterHandle> {
  return formCluster(async (servers) => {
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
  });
}

/**
 * Three masters and no replicas, on spare loopback ports, for a suite that faults one of them:
 * a node frozen for less than a minute is never failed over, and the other masters answer for
 * their slots meanwhile.
 */
export async function startMastersCluster(): Promise<RedisClusterHandle> {
  return formCluster(async (servers) => {
    const options = ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf'];
    const faultTolerant = ['--cluster-node-timeout', '60000', '--cluster-require-full-coverage', 'no'];
    for (let i = 0; i < 3; i++) servers.push(await startRedisServer([...options, ...faultTolerant]));
    const addresses = servers.map((s) => `127.0.0.1:${s.port}`);
    await promisify(execFile)(
      'redis-cli',
      ['--cluster', 'create', ...addresses, '--cluster-replicas', '0', '--cluster-yes'],
      {
        timeout: 30_000,
      },
    );
    for (const server of servers) {
      const node = new Redis(server.port, '127.0.0.1', { lazyConnect: true });
      try {
        await waitFor(
          `cluster_state:ok seen from ${server.port}`,
          async () => ((await node.cluster('INFO')) as string).includes('cluster_state:ok'),
          30_000,
        );
      } finally {
        node.disconnect();
      }
    }
  });
}

export interface SecuredClusterOptions {
  /** The default user's password: `requirepass`, and `masterauth` for the nodes' own links. */
  password: string;
  /** PEM files: the nodes then speak only TLS, to clients and to each other. */
  tls?: { cert: string; key: string; ca: string };
}

/** True once a TLS-only node answers PING, with PONG or asking for a password first. */
function answersOverTls(ca: Buffer): (port: number) => Promise<boolean> {
  return (port) =>
    new Promise((resolve) => {
      const socket = connect({ port, host: '127.0.0.1', ca, timeout: 500 }, () => socket.write('PING\r\n'));
      const done = (ok: boolean) => {
        socket.destroy();
        resolve(ok);
      };
      socket.once('timeout', () => done(false));
      socket.once('error', () => done(false));
      socket.once('data', (data) => done(/^(\+PONG|-NOAUTH)/.test(data.toString())));
    });
}

/** Three masters without replicas behind a password and, with `tls`, speaking only TLS. */
export async function startSecuredCluster({ password, tls }: SecuredClusterOptions): Promise<RedisClusterHandle> {
  const ca = tls === undefined ? undefined : readFileSync(tls.ca);
  return formCluster(async (servers) => {
    for (let i = 0; i < 3; i++) {
      const port = await freePort();
      const args = [
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        'nodes.conf',
        '--cluster-node-timeout',
        '3000',
      ];
      args.push('--requirepass', password, '--masterauth', password);
      if (tls !== undefined) {
        // The cluster bus listens on the TLS port + 10000, which freePort keeps free.
        args.push('--port', '0', '--tls-port', String(port), '--tls-cluster', 'yes', '--tls-replication', 'yes');
        args.push('--tls-cert-file', tls.cert, '--tls-key-file', tls.key, '--tls-ca-cert-file', tls.ca);
        args.push('--tls-auth-clients', 'no');
      }
      servers.push(await startRedisServer(args, port, ca === undefined ? undefined : answersOverTls(ca)));
    }
    const secured = ['-a', password, '--no-auth-warning', ...(tls === undefined ? [] : ['--tls', '--cacert', tls.ca])];
    const addresses = servers.map((s) => `127.0.0.1:${s.port}`);
    await promisify(execFile)('redis-cli', [...secured, '--cluster', 'create', ...addresses, '--cluster-yes'], {
      timeout: 30_000,
    });
    for (const server of servers) {
      const node = new Redis(server.port, '127.0.0.1', {
        lazyConnect: true,
        password,
        ...(ca === undefined ? {} : { tls: { ca } }),
      });
      try {
        await waitFor(
          `cluster_state:ok from ${server.port}`,
          async () => ((await node.cluster('INFO')) as string).includes('cluster_state:ok'),
          30_000,
        );
      } finally {
        node.disconnect();
      }
    }
  });
}

/** A connected Cluster client; fails rather than hangs if the cluster is not ready in time. */
export async function connectCluster(
  nodes: ClusterNode[],
  options: ConstructorParameters<typeof Cluster>[1] = {},
): Promise<Cluster> {
  // As the store's README sets a Cluster client up: no call re-sent after its time (WRN_SLUICE_CLUSTER_RESENDS).
  const cluster = new Cluster(nodes, {
    retryDelayOnFailover: 0,
    retryDelayOnTryAgain: 0,
    retryDelayOnClusterDown: 0,
    ...options,
  });
  cluster.on('error', () => {});
  await waitReady(cluster, isCi ? 30_000 : 15_000);
  return cluster;
}

/**
 * Two clients of a limiter under `namespace` whose keys lie on different masters, and the pid
 * of the first one's master: a test freezes it (SIGSTOP) and the other master answers on.
 */
export async function clientsOnTwoMasters(
  cluster: Cluster,
  namespace: string,
): Promise<{ cold: string; hot: string; coldMasterPid: number }> {
  const masterOf = (key: string) => cluster.slots[clientSlot(namespace, key)]?.[0] as string;
  const keys = Array.from({ length: 50 }, (_, i) => `client-${i}`);
  const cold = keys[0] as string;
  const hot = keys.find((key) => masterOf(key) !== masterOf(cold)) as string;
  const [host, port] = masterOf(cold).split(':');
  const master = new Redis(Number(port), host as string, { maxRetriesPerRequest: 0 });
  try {
    const coldMasterPid = Number((await master.info('server')).match(/process_id:(\d+)/)?.[1]);
    return { cold, hot, coldMasterPid };
  } finally {
    master.disconnect();
  }
}
