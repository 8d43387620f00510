import { type Logger, type Policy, type StoreReply, type StoreRequest, safeWhenHeld, storeKey } from '@sluice/core';
import { type RedisClient, untilReady } from '../client.js';
import {
  type ClientCounts,
  decideLocally,
  decideOneLocally,
  newClientCounts,
  type PolicyCounts,
  refundLocally,
  reusedReply,
  windowOf,
} from './client-counts.js';
import { type CheckedLocalFirst, checkLocalFirstPolicies } from './options.js';
import { createSyncExchange, withTimeout } from './sync-exchange.js';

export interface LocalFirstParts {
  /** Gets the client key as the caller gave it: the store takes keys as given (`takesKeysAsGiven`). */
  decideAtOnce(request: StoreRequest): StoreReply | undefined;
  consume(request: StoreRequest): Promise<StoreReply>;
  refund(request: StoreRequest): Promise<void>;
  reset(namespace: string, key: string, policies: readonly Policy[]): Promise<void>;
  checkPolicies(policies: readonly Policy[]): void;
  /** Reconciles with Redis now: writes every count, reads the fleet's back. */
  sync(): Promise<void>;
  /** Stops the sync timer after one last sync. */
  close(): Promise<void>;
}

/**
 * Local-first counting: decisions come from this process's counts, and a timer reconciles
 * them with Redis every `syncIntervalMs` (see README, "Local-first"). A first request for a
 * client waits for one sync of that client, so a process never starts from nothing.
 */
export function createLocalFirst(
  client: RedisClient,
  prefix: string,
  { syncIntervalMs, outageShare }: CheckedLocalFirst,
  logger: Logger,
): LocalFirstParts {
  const { windowKey, exchange } = createSyncExchange(client, prefix);
  // Per limiter (its policies), so two versions of a limiter side by side keep their own counts;
  // then by namespace and client key, in levels: a `namespace|key` string built per decision
  // would cost the decision more than its count.
  const limiters = new Map<readonly Policy[], Map<string, Map<string, ClientCounts>>>();
  const loading = new Map<ClientCounts, Promise<void>>();
  let reachable = true;
  let running: Promise<void> | undefined;
  /** The latest time any decision used: a client whose windows are all older is forgotten. */
  let latestNow = 0;
  // A sync that hangs (a silent Redis) must not stop the next ones: it counts as failed.
  const syncTimeoutMs = Math.min(Math.max(4 * syncIntervalMs, 200), 1000);

  /**
   * Writes the targets' totals and reads the fleet's back, all within one sync's timeout,
   * the wait for a first connection included: a Redis that accepts the connection and then
   * stays silent must not hold a decision that waits for its client's read.
   */
  const reconcile = async (targets: ClientCounts[]): Promise<void> => {
    let failure: unknown;
    try {
      await withTimeout((expired) => exchange(targets, expired), syncTimeoutMs);
    } catch (error) {
      failure = error;
    }
    settle(targets, failure);
  };

  const settle = (targets: ClientCounts[], failure: unknown): void => {
    if (failure !== undefined) {
      // Totals are kept and written again at the next sync, which counts them once.
      for (const counts of targets) counts.touched = true;
      if (reachable) {
        logger.warn(
          `[sluice] WRN_SLUICE_LOCAL_FIRST_OFFLINE: a local-first sync failed (${String(failure)}); each process limits alone at ${outageShare} of each limit until Redis answers.`,
        );
      }
      reachable = false;
      throw failure;
    }
    if (!reachable)
      logger.warn('[sluice] WRN_SLUICE_LOCAL_FIRST_ONLINE: Redis answers again; local-first counts are reconciled.');
    reachable = true;
  };

  const sync = (): Promise<void> => {
    if (running !== undefined) return running;
    const targets: ClientCounts[] = [];
    for (const [policies, namespaces] of limiters) {
      for (const [namespace, clients] of namespaces) {
        for (const [key, counts] of clients) {
          if (loading.has(counts)) continue; // its own read is on the way
          if (counts.touched) targets.push(counts);
          // Every window it counted in is over: the next request starts afresh.
          else if (isOver(counts, latestNow)) clients.delete(key);
          // Idle: kept for its totals, but read again before it decides.
          else counts.stale = true;
        }
        if (clients.size === 0) namespaces.delete(namespace);
      }
      if (namespaces.size === 0) limiters.delete(policies);
    }
    // A map deleted above may be the one `clientsOf` remembers; it is found again when next asked.
    lastPolicies = undefined;
    if (targets.length === 0) return Promise.resolve();
    running = reconcile(targets).finally(() => {
      running = undefined;
    });
    return running;
  };

  const timer = setInterval(() => sync().catch(() => {}), syncIntervalMs);
  timer.unref();

  // The clients of the last limiter and namespace asked for: an app's limiter asks with the
  // same two every time, and two map lookups cost a decision more than its count does.
  let lastPolicies: readonly Policy[] | undefined;
  let lastNamespace = '';
  let lastClients: Map<string, ClientCounts> | undefined;

  /** The limiter's clients under the request's namespace, if any are known here. */
  const clientsOf = (request: StoreRequest): Map<string, ClientCounts> | undefined => {
    if (request.policies !== lastPolicies || request.namespace !== lastNamespace) {
      const clients = limiters.get(request.policies)?.get(request.namespace);
      if (clients === undefined) return undefined;
      lastPolicies = request.policies;
      lastNamespace = request.namespace;
      lastClients = clients;
    }
    return lastClients;
  };

  /** Counts that can decide now: known here and read since the client was idle. */
  const ready = (counts: ClientCounts | undefined) => (counts === undefined || counts.stale ? undefined : counts);

  /** The client's counts when they can decide now, for a request whose key is safe. */
  const freshClient = (request: StoreRequest): ClientCounts | undefined => ready(clientsOf(request)?.get(request.key));

  /** `freshClient` for a key as the caller gave it (`decideAtOnce`): made safe unless held as it is. */
  const freshGivenClient = (request: StoreRequest): ClientCounts | undefined => {
    const clients = clientsOf(request);
    if (clients === undefined) return undefined;
    const given = request.key;
    const held = safeWhenHeld(given) ? clients.get(given) : undefined;
    if (held !== undefined) return ready(held);
    const key = storeKey(given);
    return key === given ? undefined : ready(clients.get(key));
  };

  /** A new or idle client's counts, once the fleet's have been read (or could not be). */
  const loadClient = async (request: StoreRequest, now: number): Promise<ClientCounts> => {
    let namespaces = limiters.get(request.policies);
    if (namespaces === undefined) {
      namespaces = new Map<string, Map<string, ClientCounts>>();
      limiters.set(request.policies, namespaces);
    }
    let clients = namespaces.get(request.namespace);
    if (clients === undefined) {
      clients = new Map<string, ClientCounts>();
      namespaces.set(request.namespace, clients);
    }
    let counts = clients.get(request.key);
    if (counts === undefined) {
      counts = newClientCounts(request, now);
      clients.set(request.key, counts);
    }
    // An idle client's read is of the windows this request falls in, not of those it last used.
    if (now > counts.lastNow) counts.lastNow = now;
    // Read the fleet's counts before deciding on a new or idle client; without Redis, go on
    // from what this process knows.
    let refresh = loading.get(counts);
    if (refresh === undefined) {
      const target = counts;
      refresh = reconcile([target])
        .catch(() => {})
        .finally(() => {
          target.stale = false;
          loading.delete(target);
        });
      loading.set(target, refresh);
    }
    await refresh;
    return counts;
  };

  const clientOf = (request: StoreRequest, now: number): ClientCounts | Promise<ClientCounts> =>
    freshClient(request) ?? loadClient(request, now);

  const share = () => (reachable ? 1 : outageShare);

  /** The decision's time, which also moves on the latest time a sync judges windows by. */
  const decisionTime = (request: StoreRequest): number => {
    const now = request.now ?? Date.now();
    if (now > latestNow) latestNow = now;
    return now;
  };

  // The limiter reads a reply decided at once before it asks again: one-policy clients are
  // decided into this one.
  const atOnce = reusedReply();

  return {
    checkPolicies: checkLocalFirstPolicies,
    // A known client decides at once, with no promise at all; a new or idle one waits for its read.
    decideAtOnce(request) {
      const counts = freshGivenClient(request);
      if (counts === undefined) return undefined;
      try {
        const now = decisionTime(request);
        if (request.policies.length === 1) return decideOneLocally(counts, request, now, share(), atOnce);
        return decideLocally(counts, request, now, share());
      } catch {
        // `consume` meets the same failure under the limiter's store-error policy.
        return undefined;
      }
    },
    consume(request) {
      const now = decisionTime(request);
      const counts = freshClient(request);
      if (counts !== undefined) {
        try {
          return Promise.resolve(decideLocally(counts, request, now, share()));
        } catch (error) {
          return Promise.reject(error);
        }
      }
      return loadClient(request, now).then((loaded) => decideLocally(loaded, request, now, share()));
    },
    async refund(request) {
      const now = request.now ?? Date.now();
      refundLocally(await clientOf(request, now), request, now);
    },
    async reset(namespace, key, policies) {
      const clients = limiters.get(policies)?.get(namespace);
      const counts = clients?.get(key);
      clients?.delete(key);
      const now = counts?.lastNow ?? Date.now();
      const keys = policies.flatMap((policy) => {
        const window = windowOf(policy, now);
        return [windowKey(namespace, key, policy, window), windowKey(namespace, key, policy, window - 1)];
      });
      // Bounded as a sync is: the limiter sets no timer on a store that decides in-process.
      await withTimeout(async (expired) => {
        await untilReady(client);
        if (!expired()) await client.del(...keys);
      }, syncTimeoutMs);
    },
    sync,
    async close() {
      clearInterval(timer);
      await running?.catch(() => {});
      await sync();
    },
  };
}

/** True when no window this process counted in can matter any more (its totals included). */
function isOver(counts: ClientCounts, now: number): boolean {
  return counts.policies.every((policy, i) => (counts.counts[i] as PolicyCounts).window < windowOf(policy, now) - 1);
}
