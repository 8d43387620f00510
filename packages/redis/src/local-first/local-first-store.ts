import {
  type Logger,
  type Policy,
  SluiceError,
  type StoreReply,
  type StoreRequest,
  safeWhenHeld,
  storeKey,
} from '@sluice/core';
import { type RedisClient, untilReady } from '../client.js';
import {
  type ClientCounts,
  decideLocally,
  decideOneLocally,
  isOver,
  newClientCounts,
  refundLocally,
  reusedReply,
  windowOf,
} from './client-counts.js';
import { createFirstReads } from './first-reads.js';
import { type CheckedLocalFirst, checkLocalFirstPolicies } from './options.js';
import { createReachability } from './reachability.js';
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
  const { windowKey, slotOf, exchange } = createSyncExchange(client, prefix);
  const reachability = createReachability(outageShare, logger);
  const { record, shareOf } = reachability;
  // Per policy set, not per limiter: limiters given the same prefix and policies share a count
  // on purpose, and a reload's new limiter keeps every client's. Then by namespace and client
  // key, in levels: a `namespace|key` string built per decision would cost the decision more
  // than its count.
  const policySets = new Map<string, PolicySet>();
  const setOfPolicies = new WeakMap<readonly Policy[], PolicySet>();
  let running: Promise<void> | undefined;
  /** The calls of the last sync still unanswered (timed out, not yet failed). */
  let draining: Promise<unknown> | undefined;
  /**
   * The time the latest decision used: a client whose windows are all older is forgotten. The
   * latest decision's, not the largest ever seen: after a clock stepped forward and back, the
   * largest would make every window look over until the clock caught up with it.
   */
  let latestNow = 0;
  // Each call of a sync is bounded: one that hangs (a silent Redis) counts as failed.
  const syncTimeoutMs = Math.min(Math.max(4 * syncIntervalMs, 200), 1000);

  const policySetOf = (policies: readonly Policy[]): PolicySet => {
    let set = setOfPolicies.get(policies);
    if (set === undefined) {
      const signature = policies.map((policy) => `${policy.slot}@${policy.version}`).join(',');
      set = policySets.get(signature);
      if (set === undefined) {
        set = { number: policySets.size, namespaces: new Map() };
        policySets.set(signature, set);
      }
      setOfPolicies.set(policies, set);
    }
    return set;
  };

  // A slot whose last call failed is not read: each new client there would wait out the whole
  // timeout, and a frozen Redis would be sent one more call every turn of the event loop. Its
  // clients decide as in an outage, and the syncs, which keep trying, write and read them.
  const firstReads = createFirstReads(async (targets) => {
    const reachable = reachability.anyDown() ? targets.filter((counts) => shareOf(counts.slot) === 1) : targets;
    record(await exchange(reachable, latestNow, syncTimeoutMs).outcome);
  });

  /** The touched clients whose windows still matter; forgets the others' over windows. */
  const syncTargets = (): ClientCounts[] => {
    const targets: ClientCounts[] = [];
    // While a slot is down, the slots that still hold a client (see `keepOnly`).
    const inUse = reachability.anyDown() ? new Set<number>() : undefined;
    for (const { namespaces } of policySets.values()) {
      for (const [namespace, clients] of namespaces) {
        for (const [key, counts] of clients) {
          // Every window it counted in is over, written or not (a failed sync's): the next
          // request starts afresh, and memory does not grow through an outage. One whose own
          // read is on the way is left to it.
          const loads = firstReads.pending(counts);
          if (!loads && isOver(counts, latestNow)) {
            clients.delete(key);
            continue;
          }
          inUse?.add(counts.slot);
          if (loads) continue;
          if (counts.touched) targets.push(counts);
          // Idle: kept for its totals, but read again before it decides.
          else counts.stale = true;
        }
        if (clients.size === 0) namespaces.delete(namespace);
      }
    }
    if (inUse !== undefined) reachability.keepOnly(inUse);
    // A map deleted above may be the one `clientsOf` remembers; it is found again when next asked.
    lastPolicies = undefined;
    return targets;
  };

  const syncOnce = async (): Promise<void> => {
    // Never two syncs' calls at once: a Redis too slow for one would only be sent more.
    if (draining !== undefined) await withTimeout(() => draining as Promise<unknown>, syncTimeoutMs);
    const targets = syncTargets();
    if (targets.length === 0) return;
    const { outcome, drained } = exchange(targets, latestNow, syncTimeoutMs);
    const watched = drained.finally(() => {
      if (draining === watched) draining = undefined;
    });
    draining = watched;
    record(await outcome);
  };

  const sync = (): Promise<void> => {
    if (running !== undefined) return running;
    running = syncOnce()
      .catch((cause: unknown) => {
        // One code for a sync Redis did not take, whichever way it failed (README, Local-first).
        throw new SluiceError('ERR_SLUICE_STORE_UNAVAILABLE', `[sluice] A local-first sync failed: ${String(cause)}`, {
          cause,
        });
      })
      .finally(() => {
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
      const clients = setOfPolicies.get(request.policies)?.namespaces.get(request.namespace);
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
    const set = policySetOf(request.policies);
    let clients = set.namespaces.get(request.namespace);
    if (clients === undefined) {
      clients = new Map<string, ClientCounts>();
      set.namespaces.set(request.namespace, clients);
    }
    let counts = clients.get(request.key);
    if (counts === undefined) {
      counts = newClientCounts(request, now, set.number, slotOf(request.namespace, request.key));
      clients.set(request.key, counts);
    }
    // An idle client's read is of the windows this request falls in, not of those it last used.
    if (now > counts.lastNow) counts.lastNow = now;
    // Read the fleet's counts before deciding on a new or idle client; without Redis, go on
    // from what this process knows.
    await firstReads.read(counts);
    return counts;
  };

  const clientOf = (request: StoreRequest, now: number): ClientCounts | Promise<ClientCounts> =>
    freshClient(request) ?? loadClient(request, now);

  /** The decision's time, which is also the time the next sync judges windows by. */
  const decisionTime = (request: StoreRequest): number => {
    latestNow = request.now ?? Date.now();
    return latestNow;
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
        if (request.policies.length === 1) return decideOneLocally(counts, request, now, shareOf(counts.slot), atOnce);
        return decideLocally(counts, request, now, shareOf(counts.slot));
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
          return Promise.resolve(decideLocally(counts, request, now, shareOf(counts.slot)));
        } catch (error) {
          return Promise.reject(error);
        }
      }
      return loadClient(request, now).then((loaded) => decideLocally(loaded, request, now, shareOf(loaded.slot)));
    },
    async refund(request) {
      const now = request.now ?? Date.now();
      refundLocally(await clientOf(request, now), request, now);
    },
    async reset(namespace, key, policies) {
      const clients = setOfPolicies.get(policies)?.namespaces.get(namespace);
      const counts = clients?.get(key);
      clients?.delete(key);
      // A reset carries no clock: the windows are those of the client's last decision here, or
      // of the latest decision this store made (an injected clock's time), or the host's.
      const now = counts?.lastNow ?? (latestNow > 0 ? latestNow : Date.now());
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

/** Every limiter's clients with one set of policies, by namespace and client key. */
interface PolicySet {
  /** The set's number in this process, part of its field in Redis. */
  readonly number: number;
  readonly namespaces: Map<string, Map<string, ClientCounts>>;
}
