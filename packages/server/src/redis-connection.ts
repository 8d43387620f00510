import { createLimiter, messageOf, type RateLimitStore, SluiceError } from '@sluice/core';
import { clientSlot, createRedisStore } from '@sluice/redis';
import type { RedisRulesClient } from '@sluice/rules';
import { Cluster, Redis } from 'ioredis';
import { type RedisTarget, redacted } from './cli-args.js';
import type { ServiceLog } from './log.js';
import { settledOrAfter } from './settled-or-after.js';

export interface RedisConnection {
  store: RateLimitStore;
  /** The same Redis as a rules source (`watchRedisRules`) reads it. */
  rules: RedisRulesClient;
  /** Calls `onChange(false)` when the connection drops and `onChange(true)` when it is ready again. */
  watch(onChange: (up: boolean) => void): void;
  close(): Promise<void>;
}

/** How long start-up waits for Redis before giving up with a clear message. */
const CONNECT_TIMEOUT_MS = 5000;
/** How often a Cluster client re-reads which master serves which slots. */
const SLOTS_REFRESH_MS = 1000;
/** How long `close()` waits for QUIT's reply: a stalled Redis never sends it. */
const QUIT_TIMEOUT_MS = 1000;
/** Between reconnection attempts once started: quick at first, then every 2 s, for ever. */
const retryDelay = (attempt: number): number => Math.min(attempt * 200, 2000);

/** Where `target` is, as messages and the log name it: never with its password. */
const whereOf = (target: RedisTarget): string =>
  'url' in target
    ? redacted(target.url)
    : `${target.tls ? 'rediss://' : ''}${target.nodes.map((n) => `${n.host}:${n.port}`).join(',')}`;

/**
 * The URL's database, selected again where it can fail aloud: ioredis reports a `SELECT` it
 * sends on connecting only as an error event, and the counts then land in database 0.
 */
async function selected(client: Redis): Promise<void> {
  const db = client.options.db ?? 0;
  if (db !== 0) await client.select(db);
}

/**
 * A client of `target`, connected, with every master answering, within 5 s; else
 * `ERR_SLUICE_STORE_CONNECT` with the reason. Once connected, ioredis reconnects for ever and
 * commands fail at once while it is away (a single Redis's without an offline queue; the
 * store's own check on a Cluster).
 */
export async function openRedis(target: RedisTarget): Promise<Redis | Cluster> {
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
          // The offline queue stays on: without it a Cluster fails the calls sent to a master
          // while its connection opens (after a failover too), and the store fails calls at
          // once itself while the Cluster is not ready (WRN_SLUICE_CLUSTER_OFFLINE_QUEUE).
          clusterRetryStrategy: retryDelay,
          // Never re-sent when a node's connection closes: the master may have decided it already.
          retryDelayOnFailover: 0,
          // A call a migrating slot refused (TRYAGAIN) is tried again at once or fails: sent
          // again 100 ms later, past the call's time, it charged a request already answered.
          retryDelayOnTryAgain: 0,
          // A call refused while the cluster is down (a master marked failed, its replica not
          // yet promoted) fails at once, with Redis's reason, rather than 100 ms later.
          retryDelayOnClusterDown: 0,
          // That re-send was also when ioredis re-read the slot map: without it, only a timer
          // finds the replica that took over a failed master's slots.
          slotsRefreshInterval: SLOTS_REFRESH_MS,
          redisOptions: {
            maxRetriesPerRequest: 0,
            username: target.username,
            password: target.password,
            // Node's own trust store, with NODE_EXTRA_CA_CERTS for a private CA, as for rediss:// URLs.
            ...(target.tls ? { tls: {} } : {}),
          },
        });
  // Until start-up is over, errors reject `connect()`; later ones are reported through health.
  let lastError: string | undefined;
  client.on('error', (error: Error & { lastNodeError?: Error }) => {
    // A Cluster that no node let in says only "Failed to refresh slots cache"; the last node's
    // own error says why (a wrong password, a refused connection, a TLS failure).
    lastError = error.message + (error.lastNodeError === undefined ? '' : ` (${error.lastNodeError.message})`);
  });
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      // Every master answers, so that the first calls do not wait for their connections to open.
      client
        .connect()
        .then(() =>
          Promise.all(
            client instanceof Cluster ? client.nodes('master').map((n) => n.ping()) : [client.ping(), selected(client)],
          ),
        ),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${CONNECT_TIMEOUT_MS} ms`)), CONNECT_TIMEOUT_MS);
      }),
    ]);
  } catch (cause) {
    client.disconnect();
    throw new SluiceError(
      'ERR_SLUICE_STORE_CONNECT',
      `[sluice] Cannot reach Redis at ${whereOf(target)}: ${lastError ?? messageOf(cause)}`,
      { cause },
    );
  } finally {
    clearTimeout(timer);
  }
  return client;
}

/** The start-up check's namespace: its keys live 1 s. */
const START_PREFIX = 'sluice-start';

/**
 * A client key for each master, as the slot map has them (one key on a single Redis): ACLs and
 * memory limits are set node by node, so each master is asked to write.
 */
function keyPerMaster(client: Redis | Cluster): string[] {
  if (!(client instanceof Cluster)) return ['start'];
  const masters = new Set(client.slots.flatMap((nodes) => (nodes?.[0] === undefined ? [] : [nodes[0]])));
  const keys: string[] = [];
  const covered = new Set<string>();
  for (let i = 0; covered.size < masters.size && i < 100_000; i++) {
    const key = `start-${i}`;
    const master = client.slots[clientSlot(START_PREFIX, key)]?.[0];
    if (master === undefined || covered.has(master)) continue;
    covered.add(master);
    keys.push(key);
  }
  return keys;
}

/**
 * Two decisions on every master, which write, before the service serves: a read-only replica,
 * a Redis out of memory under `noeviction`, or a user whose ACL denies a command or key the
 * scripts need all answer a connection and a ping, then fail every call. Two, as ioredis sends
 * a script's body the first time and its hash after: a user denied EVALSHA fails the second.
 */
async function checkDecides(client: Redis | Cluster, store: RateLimitStore, target: RedisTarget): Promise<void> {
  const limiter = createLimiter({
    store,
    // A limit no start-up reaches: each decision is allowed, so each writes.
    policies: [{ name: 'start', limit: 1_000_000, window: 1000 }],
    prefix: START_PREFIX,
    onStoreError: 'throw',
    storeTimeoutMs: CONNECT_TIMEOUT_MS,
    logger: { warn() {} },
  });
  try {
    for (const key of keyPerMaster(client)) {
      await limiter.consume(key);
      await limiter.consume(key);
    }
  } catch (error) {
    const cause = error instanceof Error && error.cause instanceof Error ? error.cause : error;
    throw new SluiceError(
      'ERR_SLUICE_STORE_CONNECT',
      `[sluice] Redis at ${whereOf(target)} answers but cannot decide: ${messageOf(cause)}`,
      { cause },
    );
  }
}

/** QUIT, then the connection dropped: a stalled Redis never answers QUIT, so it is waited for 1 s at most. */
export async function quitRedis(client: Redis | Cluster): Promise<void> {
  await settledOrAfter(client.quit(), QUIT_TIMEOUT_MS);
  client.disconnect();
}

/**
 * Connects before the service starts serving, so a Redis that is unreachable, or that answers
 * but cannot decide, stops start-up with a clear message. While Redis stalls with the
 * connection open the store sends nothing more to it (the Redis store's stall guard), so calls
 * fail fast with UNAVAILABLE instead of piling up.
 */
export async function connectRedis(target: RedisTarget, log: ServiceLog): Promise<RedisConnection> {
  const client = await openRedis(target);
  // No deny cache: replicas share the counts, and one that cached a refusal would keep it
  // past another replica's give-back of the charge that caused it (the charge-and-refund path).
  const store = createRedisStore({ client, logger: log, denyCache: false });
  try {
    await checkDecides(client, store, target);
  } catch (error) {
    client.disconnect();
    throw error;
  }
  log.line('info', 'connected to Redis', { redis: whereOf(target) });
  const cluster = client instanceof Cluster ? client : undefined;
  // The rules subscriber is a connection of its own, made now: it may wait for its SUBSCRIBE
  // to be sent, where the store's connections fail a call at once while they are away.
  const subscriberOptions = { lazyConnect: false, enableOfflineQueue: true };
  return {
    store,
    rules: {
      hgetall: (key) => client.hgetall(key),
      hget: (key, field) => client.hget(key, field),
      hset: (key, ...fieldsAndValues) => client.hset(key, ...fieldsAndValues),
      publish: (channel, message) => client.publish(channel, message),
      duplicate: () =>
        cluster === undefined
          ? (client as Redis).duplicate(subscriberOptions)
          : cluster.duplicate([], subscriberOptions),
    },
    watch(onChange) {
      client.on('ready', () => onChange(true));
      client.on('close', () => onChange(false));
      client.on('end', () => onChange(false));
    },
    async close() {
      client.removeAllListeners('ready');
      client.removeAllListeners('close');
      client.removeAllListeners('end');
      // No call is left in flight by now.
      await quitRedis(client);
    },
  };
}
