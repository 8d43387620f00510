import {
  checkOptionNames,
  type Logger,
  type Policy,
  quietLogger,
  type RateLimitStore,
  SluiceError,
  type StoreLimiterSettings,
  type StoreReply,
  type StoreRequest,
} from '@sluice/core';
import calculateSlot from 'cluster-key-slot';
import type { Cluster } from 'ioredis';
import { backingOf, forgetEverywhere, keepDenyCache } from './backing.js';
import { createBatcher } from './batcher.js';
import {
  checkClient,
  clusterFailsWhileNodesOpen,
  clusterPipelinesAutomatically,
  clusterResendsLate,
  notReady,
  type RedisClient,
  resendsInFlight,
  untilReady,
  watchReady,
} from './client.js';
import { defineScripts } from './commands.js';
import { decisionArgs, type Operation, policyList, runHeader } from './decision-args.js';
import { createDenyCache, type DenyCacheOptions } from './deny-cache.js';
import { decisionKeys } from './keys.js';
import { createLocalFirst, type LocalFirstParts } from './local-first/local-first-store.js';
import { checkLocalFirst, type LocalFirstOptions } from './local-first/options.js';
import { MAX_KEYS_PER_CALL } from './lua/prelude.js';
import { parseReplies } from './reply.js';
import { mixedScript, scriptFor } from './scripts.js';
import { createStallGuard, lookDue, stalledError, waitedTooLong } from './stall-guard.js';

export const DEFAULT_REDIS_PREFIX = 'sluice:';

export interface RedisStoreOptions {
  /** An ioredis `Redis` or `Cluster` that you own; sluice never closes it. */
  client: RedisClient;
  /** Put in front of every key, to keep sluice's keys apart from others. @default 'sluice:' */
  prefix?: string | undefined;
  /** Receives the store's one warning about the client's settings. @default console */
  logger?: Logger | undefined;
  /**
   * Refuse a client refused moments ago in-process, without a Redis call, until its wait ends
   * (README, "Deny cache"); `false` turns it off. @default { maxKeys: 10000 }
   */
  denyCache?: DenyCacheOptions | false | undefined;
  /**
   * Decide from this process's counts and reconcile with Redis every `syncIntervalMs` in the
   * background: no round trip per decision, a bounded excess over the limit (README,
   * "Local-first"). Window algorithms only.
   */
  localFirst?: LocalFirstOptions | undefined;
}

/** A local-first store's reconciliation, for tests and shutdown, and its standing, for metrics. */
export type LocalFirstControl = Pick<LocalFirstParts, 'sync' | 'close' | 'status'>;

export interface RedisStore extends RateLimitStore {
  readonly name: 'redis';
  readonly prefix: string;
  /**
   * Present in local-first mode: `sync()` reconciles now; `close()` stops the timer after a last
   * sync; `status()` tells how the store stands with Redis (`LocalFirstStatus`).
   */
  readonly localFirst?: LocalFirstControl;
}

const OPTION_NAMES = ['client', 'prefix', 'logger', 'denyCache', 'localFirst'];

/**
 * A store that decides in Redis: every decision is one script run over all the limiter's
 * policies, atomic and all-or-nothing, on a single Redis or a Redis Cluster. Decisions asked
 * for together share one script call (see `createBatcher`).
 * Time is Redis `TIME` unless the limiter injects a clock. Failures reject, and the limiter's
 * `onStoreError` and `storeTimeoutMs` decide what a request gets; a call is never retried.
 *
 * @example
 * const client = new Redis(process.env.REDIS_URL, { maxRetriesPerRequest: 0 });
 * const limiter = createLimiter({ limit: 100, window: '1m', store: createRedisStore({ client }) });
 */
export function createRedisStore(options: RedisStoreOptions): RedisStore {
  if (typeof options !== 'object' || options === null) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      '[sluice] createRedisStore needs an options object such as `{ client }`.',
    );
  }
  checkOptionNames(options, OPTION_NAMES, 'Redis store');
  const client = checkClient(options.client);
  const prefix = checkPrefix(options.prefix === undefined ? DEFAULT_REDIS_PREFIX : options.prefix);
  const given = options.logger === undefined ? console : options.logger;
  if (typeof given?.warn !== 'function') {
    throw new SluiceError('ERR_SLUICE_INVALID_LOGGER', '[sluice] Option `logger` must have a `warn(message)` method.');
  }
  // Local-first warns from its timer's syncs, where a logger's failure has nowhere to go.
  const logger = quietLogger(given);
  if (resendsInFlight(client)) {
    logger.warn(
      '[sluice] WRN_SLUICE_REDIS_RESENDS: this ioredis client re-sends commands that were in flight when a connection drops, so a decision Redis already made can be counted twice. Create it with `maxRetriesPerRequest: 0`.',
    );
  }
  if (clusterResendsLate(client)) {
    logger.warn(
      '[sluice] WRN_SLUICE_CLUSTER_RESENDS: this ioredis Cluster re-sends a call whose node connection closed, one a migrating slot refused (TRYAGAIN) or one refused while the cluster is down (CLUSTERDOWN), after a delay, so a decision can be counted twice or charged after the fail policy answered it. Create it with `retryDelayOnFailover: 0`, `retryDelayOnTryAgain: 0` and `retryDelayOnClusterDown: 0`.',
    );
  }
  if (clusterPipelinesAutomatically(client)) {
    logger.warn(
      '[sluice] WRN_SLUICE_CLUSTER_AUTO_PIPELINING: this ioredis Cluster pipelines automatically, and follows a MOVED or ASK redirect only when every call of a pipeline got it, so during a reshard or a planned failover decisions fail under the fail policy. Create it without `enableAutoPipelining`: the store sends concurrent decisions together itself.',
    );
  }
  if (clusterFailsWhileNodesOpen(client)) {
    logger.warn(
      "[sluice] WRN_SLUICE_CLUSTER_OFFLINE_QUEUE: this ioredis Cluster has `enableOfflineQueue: false`, so a call sent to a master whose connection is still opening fails, and ioredis opens each master's connection on its first call: the first decisions after start-up, and after a master reconnects, get the fail policy. Leave `enableOfflineQueue` at its default: the store fails calls at once itself while the client is not ready.",
    );
  }
  const localFirst = options.localFirst === undefined ? undefined : checkLocalFirst(options.localFirst);
  // Local-first decides in-process from counts it already holds: a deny cache's settings would
  // be ignored, which a user tuning `maxKeys` would never learn.
  if (localFirst !== undefined && options.denyCache !== undefined && options.denyCache !== false) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      '[sluice] Option `denyCache` does not apply with `localFirst`, which decides in-process without a Redis call; leave it out or pass `false`.',
    );
  }
  const onCluster = (client as { isCluster?: boolean }).isCluster === true;
  const callScript = defineScripts(client);
  const denyCache = denyCacheOf(options.denyCache);
  const backing = backingOf(client, prefix, 'exact');
  if (denyCache !== undefined) keepDenyCache(backing, denyCache);
  // A key's hash slot on a Cluster, where one call may not span slots.
  const groupOf = onCluster ? calculateSlot : () => 0;
  // The connection a slot's calls travel on: on a Cluster the slot's master as the client's
  // slot map has it now (after a failover, the replica that took over, a connection of its own).
  const connectionOf = onCluster
    ? (slot: number) => (client as Cluster).slots[slot]?.[0] ?? `slot ${slot}`
    : () => 'redis';
  const stalls = createStallGuard();
  const batcher = createBatcher({
    call: callScript,
    groupOf,
    connectionOf,
    notReady: () => notReady(client),
    stalls,
    learn: denyCache?.learn,
  });

  watchReady(client);
  if (localFirst !== undefined) {
    const local = createLocalFirst(client, prefix, localFirst, logger);
    return {
      name: 'redis',
      // Decided in-process; a new client's one read has its own timeout and never fails.
      local: true,
      takesKeysAsGiven: true,
      // Local-first replies are built from this process's counts; Redis's by the checked parser.
      checksReplies: true,
      prefix,
      backing: backingOf(client, prefix, 'local-first'),
      checkPolicies(policies) {
        policyList(policies);
        local.checkPolicies(policies);
      },
      decideAtOnce: local.decideAtOnce,
      consume: local.consume,
      refund: local.refund,
      reset: local.reset,
      localFirst: { sync: local.sync, close: local.close, status: local.status },
    };
  }

  // How the limiter of each policies array answers a call that takes too long. A call held
  // back while the first connection opens has been answered by the limiter's `onStoreError`
  // once its wait is over: sent afterwards, it must not charge a request refused, or reset a
  // count the caller was told is not reset.
  const limiters = new WeakMap<readonly Policy[], StoreLimiterSettings>();
  const timeoutOf = (policies: readonly Policy[]): number =>
    limiters.get(policies)?.storeTimeoutMs ?? Number.POSITIVE_INFINITY;
  /** Sends `send`'s call on `keys`' connection, unless a stall there holds back a caller who waits `timeoutMs`. */
  const unlessStalled = async <T>(keys: readonly string[], timeoutMs: number, send: () => Promise<T>): Promise<T> => {
    const connection = connectionOf(groupOf(keys[0] as string));
    const stall = stalls.stall(connection);
    if (waitedTooLong(stall, timeoutMs) && !lookDue(stall, timeoutMs)) throw stalledError(stall);
    const reply = send();
    stalls.watch(connection, reply);
    return reply;
  };
  const opened = async (opening: Promise<void>, asked: readonly (readonly Policy[])[], charges: boolean) => {
    const startedAt = Date.now();
    await opening;
    const waited = Date.now() - startedAt;
    for (const policies of asked) {
      const limiter = limiters.get(policies);
      if (limiter === undefined || waited < limiter.storeTimeoutMs) continue;
      // A request let through by 'allow' is counted; a refund or reset reported failed is not made.
      const takenAsDone = charges ? limiter.onStoreError === 'allow' : limiter.onStoreError !== 'throw';
      if (!takenAsDone) {
        throw new SluiceError(
          'ERR_SLUICE_STORE_UNAVAILABLE',
          `[sluice] Redis store: the first connection opened after the limiter's storeTimeoutMs (${limiter.storeTimeoutMs} ms), which answered the call by onStoreError '${limiter.onStoreError}'; it was not sent.`,
        );
      }
    }
  };

  const run = (operation: Operation, request: StoreRequest): Promise<StoreReply> => {
    try {
      const opening = untilReady(client);
      if (opening)
        return opened(opening, [request.policies], operation === 'consume').then(() => run(operation, request));
      const { policies } = request;
      const args = decisionArgs(operation, request);
      const keys = decisionKeys(prefix, request.namespace, request.key, policies);
      // A consume's reply teaches the deny cache, in the batcher, as it lands.
      const learnFrom = operation === 'consume' ? request : undefined;
      return batcher.decide(scriptFor(policies), keys, args, {
        policyCount: policies.length,
        now: request.now,
        learnFrom,
        timeoutMs: timeoutOf(policies),
      });
    } catch (error) {
      return Promise.reject(error);
    }
  };

  /**
   * Several decisions in one script call of their own, all or nothing. `undefined` when one
   * call cannot hold them: more keys than a call takes, or keys in several Cluster slots.
   */
  const consumeAll = (requests: readonly StoreRequest[]): Promise<StoreReply[]> | undefined => {
    const keys: string[] = [];
    const args: string[] = [];
    // The script reads each client's state once, before any charge: a client asked twice
    // would be decided twice on the same state.
    const clients = new Set<string>();
    for (const request of requests) {
      const own = decisionKeys(prefix, request.namespace, request.key, request.policies);
      if (clients.has(own[0] as string)) return undefined;
      clients.add(own[0] as string);
      keys.push(...own);
      const shared = decisionArgs('all', request);
      args.push(runHeader(1, shared), ...shared.slice(1));
    }
    if (keys.length > MAX_KEYS_PER_CALL) return undefined;
    if (onCluster && keys.some((key) => calculateSlot(key) !== calculateSlot(keys[0] as string))) return undefined;
    const first = scriptFor((requests[0] as StoreRequest).policies);
    const script = requests.every((r) => scriptFor(r.policies) === first) ? first : mixedScript;
    const asked = requests.map((r) => ({ policyCount: r.policies.length, now: r.now }));
    const send = async (): Promise<StoreReply[]> => {
      const opening = untilReady(client);
      if (opening)
        await opened(
          opening,
          requests.map((request) => request.policies),
          true,
        );
      const sentAt = Date.now();
      // One call for all: held back only once the longest waiter among them would have given up.
      const timeoutMs = Math.max(...requests.map((request) => timeoutOf(request.policies)));
      // Decisions asked for before these go first, as they would without batching.
      batcher.flush();
      const raw = await unlessStalled(keys, timeoutMs, () => callScript(script, keys, args));
      const replies = parseReplies(raw, asked);
      // Each reply teaches the deny cache as a consume's does: a charge forgets the client's
      // refusal, whose figures it changed, and a refusal is kept as any other.
      if (denyCache !== undefined) {
        for (let i = 0; i < requests.length; i++) {
          const request = requests[i] as StoreRequest;
          denyCache.learn(request, request.now ?? sentAt, replies[i] as StoreReply);
        }
      }
      return replies;
    };
    return send();
  };

  /** The deny cache had no refusal for the last request: the limiter asks `consume` next. */
  let justMissed = false;
  return {
    name: 'redis',
    // Every reply comes through `parseReplies`, which refuses one that is no decision.
    checksReplies: true,
    prefix,
    backing,
    checkPolicies(policies, _throttle, limiter) {
      policyList(policies);
      limiters.set(policies, limiter);
    },
    consumeAll,
    ...(denyCache && {
      takesKeysAsGiven: true,
      decideAtOnce(request: StoreRequest) {
        const cached = denyCache.lookupGiven(request);
        if (cached === undefined) justMissed = true;
        return cached;
      },
    }),
    consume(request) {
      if (denyCache === undefined) return run('consume', request);
      // The limiter sends the request `decideAtOnce` just missed on straight here, in the same
      // turn: nothing can have been learned since, so it goes to Redis without a second lookup.
      // (Skipping a lookup is always safe: Redis decides exactly, the cache only saves a call.)
      const known = justMissed ? undefined : denyCache.lookup(request);
      justMissed = false;
      if (known !== undefined) return Promise.resolve(known);
      return run('consume', request);
    },
    async refund(request) {
      forgetEverywhere(backing, request.namespace, request.key);
      await run('refund', request);
      // A refusal that arrived while the refund was on its way was decided before it.
      forgetEverywhere(backing, request.namespace, request.key);
    },
    async reset(namespace, key, policies) {
      // Awaited only while opening: a ready client flushes the batch in this same turn.
      const opening = untilReady(client);
      if (opening) await opened(opening, [policies], false);
      const keys = decisionKeys(prefix, namespace, key, policies);
      forgetEverywhere(backing, namespace, key);
      // Decisions asked for before the reset go first, as they would without batching.
      batcher.flush();
      await unlessStalled(keys, timeoutOf(policies), () => client.del(...keys));
      forgetEverywhere(backing, namespace, key);
    },
  };
}

function denyCacheOf(option: DenyCacheOptions | false | undefined) {
  if (option === false) return undefined;
  if (option !== undefined && (typeof option !== 'object' || option === null || Array.isArray(option))) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `[sluice] Option \`denyCache\` must be \`false\` or an object such as \`{ maxKeys: 10000 }\`; received ${String(option)}.`,
    );
  }
  return createDenyCache(option ?? {});
}

function checkPrefix(prefix: unknown): string {
  // A brace would start a hash tag before sluice's own; control characters only invite trouble.
  if (typeof prefix !== 'string' || prefix.length > 64 || /[{}\p{Cc}]/u.test(prefix)) {
    const shown = typeof prefix === 'string' ? JSON.stringify(prefix) : String(prefix);
    throw new SluiceError(
      'ERR_SLUICE_INVALID_PREFIX',
      `[sluice] Option \`prefix\` must be a string of at most 64 characters without \`{\`, \`}\` or control characters; received ${shown}.`,
    );
  }
  return prefix;
}
