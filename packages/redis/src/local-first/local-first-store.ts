import {
  type Logger,
  messageOf,
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
  refundLocally,
  reusedReply,
  windowOf,
} from './client-counts.js';
import { createClientTable } from './client-table.js';
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
  /** Reconciles with Redis now: writes every count changed since the last sync, reads the fleet's back. */
  sync(): Promise<void>;
  /** Stops the sync timer after one last sync. */
  close(): Promise<void>;
  /** What an operator watches: see {@link LocalFirstStatus}. */
  status(): LocalFirstStatus;
}

/** How a local-first store stands with Redis now, for metrics (`@sluice/otel`'s `localFirstStores`). */
export interface LocalFirstStatus {
  /** Clients whose counts this process keeps. */
  readonly clients: number;
  /** Hash slots whose last call failed: their clients are held to `outageShare`. 0 while Redis answers. */
  readonly slotsDown: number;
  /** Sync and first-read calls Redis did not answer (failed or timed out), one per hash slot per exchange, since creation. */
  readonly failedCalls: number;
}

/**
 * Local-first counting: decisions come from this process's counts, and a timer reconciles
 * them with Redis every `syncIntervalMs` (see README, "Local-first"). A first request for a
 * client waits for one sync of that client, so a process never starts from nothing.
 */
export function createLocalFirst(
  client: RedisClient,
  prefix: string,
  { syncIntervalMs, outageShare, maxKeys }: CheckedLocalFirst,
  logger: Logger,
): LocalFirstParts {
  const { windowKey, slotOf, exchange, settledOn } = createSyncExchange(client, prefix);
  const reachability = createReachability(outageShare, logger);
  const { record, isDown, shareOf } = reachability;
  let running: Promise<void> | undefined;
  /** Tells whoever waits for the next sync's end whether it went through. */
  let syncEnded: ((reached: boolean) => void) | undefined;
  let nextSyncEnd: Promise<boolean> | undefined;
  let closed = false;
  /**
   * The time the latest decision used: a client whose windows are all older is forgotten. The
   * latest decision's, not the largest ever seen: after a clock stepped forward and back, the
   * largest would make every window look over until the clock caught up with it.
   */
  let latestNow = 0;
  // Each call of a sync is bounded: one that hangs (a silent Redis) counts as failed.
  const syncTimeoutMs = Math.min(Math.max(4 * syncIntervalMs, 200), 1000);

  /** A new client waits for room, and no client had been decided on to write. */
  let roomAwaited = false;
  const table = createClientTable(maxKeys, syncIntervalMs, () => {
    // No sync comes after `close()`. While a slot is down none would write what the table
    // holds: the new client is kept over the bound at once, where a sync per new client walked
    // every count Redis had not got (9 ms a client at 14,000 clients, the event loop blocked).
    if (closed || reachability.anyDown()) return Promise.resolve(false);
    nextSyncEnd ??= new Promise((resolve) => {
      syncEnded = resolve;
    });
    const ended = nextSyncEnd;
    // A table full of counts Redis has not got: write them now rather than at the next tick, so
    // the new client waits for one sync's calls, not the interval. Only with something to write:
    // a sync with nothing would end at once and send its waiters round again without I/O. With
    // nothing yet (every client's first read still on the way), the first client read starts it.
    if (table.hasTouched()) syncSoon();
    else roomAwaited = true;
    return ended;
  });

  // A slot whose last call failed is not read: each new client there would wait out the whole
  // timeout, and a frozen Redis would be sent one more call every turn of the event loop. Its
  // clients decide as in an outage, and the syncs, which keep trying, write and read them.
  const readFirst = createFirstReads(async (targets, stopped) => {
    // By the slot's state, not its share: at the default `outageShare` of 1 a down slot's share
    // is whole, and each new client there waited for a read that failed, counted in `failedCalls`.
    const reachable = reachability.anyDown() ? targets.filter((counts) => !isDown(counts.slot)) : targets;
    // Its clients are decided on next, which puts them on the touched list, written or not.
    const outcome = await exchange(reachable, latestNow, syncTimeoutMs, stopped);
    // After `close()` the client is the app's to disconnect: a read failing then is no outage.
    if (!closed) record(outcome);
  }, syncTimeoutMs);

  /**
   * The clients a sync sends first (`probes`), and those it keeps back (`waiting`): while a slot
   * is down, one of its clients goes to find out whether it answers again, and the others only
   * once it has. Every client was sent, and each interval built the calls of every client Redis
   * had not got, which the first failure then left unsent: 30,000 clients decided on during an
   * outage kept the event loop busy from one sync to the next.
   */
  const probing = (taken: ClientCounts[]): { probes: ClientCounts[]; waiting: ClientCounts[] } => {
    if (!reachability.anyDown()) return { probes: taken, waiting: [] };
    const probed = new Set<number>();
    const probes: ClientCounts[] = [];
    const waiting: ClientCounts[] = [];
    for (const counts of taken) {
      // A client under reset is sent by no sync (see the exchange): it is no probe.
      const sent =
        !isDown(counts.slot) || (counts.resetting === 0 && !probed.has(counts.slot) && probed.add(counts.slot));
      (sent ? probes : waiting).push(counts);
    }
    return { probes, waiting };
  };

  /**
   * Until when the timer sends no sync: a call timeout after one that reached no Redis at all,
   * unless a client on a slot that answers is decided on meanwhile (`touchDecided`).
   * Each sync walks every client decided on since Redis went away, and at every interval that
   * walk cost the event loop more than the decisions (100,000 clients at 10 ms, all of it);
   * ioredis takes as long to reconnect (50 ms a retry, growing to 2 s).
   */
  let restUntil = 0;

  /**
   * Puts a client decided on, read or refunded on the touched list. One on a slot that answers
   * ends a rest: a cluster's sync that carried only a dead master's clients reached no Redis, and
   * the rest held the clients of the masters that answer, decided on next, unsynced for as long.
   */
  const touchDecided = (counts: ClientCounts): void => {
    if (restUntil !== 0 && !isDown(counts.slot)) restUntil = 0;
    table.touch(counts);
  };

  /** One sync; whether it wrote anything that was to be written (nothing to write counts as done). */
  const syncOnce = async (): Promise<boolean> => {
    // A node still owing the last sync's replies is sent nothing (see the exchange).
    const taken = table.takeTouched(latestNow);
    // While a slot is down, those that no longer hold a client are forgotten (see `keepOnly`).
    if (reachability.anyDown()) reachability.keepOnly(table.slotsInUse);
    const { probes, waiting } = probing(taken);
    if (probes.length === 0) return true;
    const result = await exchange(probes, latestNow, syncTimeoutMs);
    // The clients kept back on a slot its probe found answering are written in this sync too.
    const back: ClientCounts[] = [];
    for (const counts of waiting) {
      if (result.answered.has(counts.slot) && !result.failed.has(counts.slot)) back.push(counts);
      else table.touch(counts);
    }
    if (back.length > 0) {
      const { answered, failed, unwritten } = await exchange(back, latestNow, syncTimeoutMs);
      for (const slot of answered) result.answered.add(slot);
      for (const [slot, error] of failed) if (!result.failed.has(slot)) result.failed.set(slot, error);
      for (const counts of unwritten) result.unwritten.add(counts);
    }
    // No rest while a client of a slot that answers waits to be written: one decided on while
    // this sync's calls were out waited it out.
    const upSlot = (counts: ClientCounts) => !isDown(counts.slot) && !result.failed.has(counts.slot);
    const reachedNone = result.answered.size === 0 && result.failed.size > 0;
    restUntil = reachedNone && !table.someTouched(upSlot) ? performance.now() + syncTimeoutMs : 0;
    const targets = back.length === 0 ? probes : [...probes, ...back];
    for (const counts of result.unwritten) table.touch(counts);
    table.written(targets);
    record(result);
    return result.unwritten.size < targets.length;
  };

  /** Another sync is wanted once the one under way ends (`syncSoon`). */
  let syncAgain = false;
  const sync = (): Promise<void> => {
    if (running !== undefined) return running;
    running = syncOnce()
      .then(
        // A sync that wrote none of its clients (each held by its reset) made no room: a new
        // client waiting for some is kept over the bound rather than sent round again.
        (wrote) => endSync(wrote),
        (cause: unknown) => {
          endSync(false);
          // One code for a sync Redis did not take, whichever way it failed (README, Local-first).
          throw new SluiceError(
            'ERR_SLUICE_STORE_UNAVAILABLE',
            `[sluice] A local-first sync failed: ${messageOf(cause)}`,
            {
              cause,
            },
          );
        },
      )
      .finally(() => {
        running = undefined;
        if (syncAgain) {
          syncAgain = false;
          syncSoon();
        }
      });
    return running;
  };
  /**
   * For clients waiting for room: a sync at the next turn of the event loop, or right after the
   * one under way, which took its clients before those that now wait were decided on (its end
   * would send them round again to wait for the next tick). Not in this turn: a client read
   * but not yet decided on would be taken, and written, without the charge its decision makes.
   */
  let syncScheduled = false;
  const syncSoon = (): void => {
    if (closed || syncScheduled) return;
    syncScheduled = true;
    setImmediate(() => {
      syncScheduled = false;
      if (running === undefined) sync().catch(() => {});
      else syncAgain = true;
    });
  };
  const endSync = (reached: boolean): void => {
    const ended = syncEnded;
    syncEnded = undefined;
    nextSyncEnd = undefined;
    ended?.(reached);
  };
  /**
   * A sync that writes every decision made before it was asked for: one under way took its
   * clients before, so it is waited for (however it ended) and another made. The timer's tick
   * needs no such sync: one under way stands for it.
   */
  const syncNow = async (): Promise<void> => {
    await running?.catch(() => {});
    return sync();
  };
  const timer = setInterval(() => {
    if (performance.now() >= restUntil) sync().catch(() => {});
  }, syncIntervalMs);
  timer.unref();

  /** The client's counts when they can decide now, for a request whose key is safe. */
  const freshClient = (request: StoreRequest): ClientCounts | undefined => {
    const counts = table.clientsOf(request)?.get(request.key);
    return counts !== undefined && table.isFresh(counts) ? counts : undefined;
  };

  /** `freshClient` for a key as the caller gave it (`decideAtOnce`): made safe unless held as it is. */
  const freshGivenClient = (request: StoreRequest): ClientCounts | undefined => {
    const clients = table.clientsOf(request);
    if (clients === undefined) return undefined;
    const given = request.key;
    let counts = safeWhenHeld(given) ? clients.get(given) : undefined;
    if (counts === undefined) {
      const key = storeKey(given);
      if (key === given) return undefined;
      counts = clients.get(key);
    }
    return counts !== undefined && table.isFresh(counts) ? counts : undefined;
  };

  /** A new or idle client's counts, once the fleet's have been read (or could not be). */
  const loadClient = async (request: StoreRequest, now: number): Promise<ClientCounts> => {
    const counts = await table.admit(request, now, () => slotOf(request.namespace, request.key));
    // An idle client's read is of the windows this request falls in, not of those it last used.
    if (now > counts.lastNow) counts.lastNow = now;
    table.hold(counts);
    // Read the fleet's counts before deciding on a new or idle client; without Redis, go on
    // from what this process knows.
    await readFirst(counts);
    touchDecided(counts);
    if (roomAwaited) {
      roomAwaited = false;
      syncSoon();
    }
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
        const reply =
          request.policies.length === 1
            ? decideOneLocally(counts, request, now, shareOf(counts.slot), atOnce)
            : decideLocally(counts, request, now, shareOf(counts.slot));
        if (!counts.touched) touchDecided(counts);
        return reply;
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
          const reply = decideLocally(counts, request, now, shareOf(counts.slot));
          touchDecided(counts);
          return Promise.resolve(reply);
        } catch (error) {
          return Promise.reject(error);
        }
      }
      return loadClient(request, now).then((loaded) => decideLocally(loaded, request, now, shareOf(loaded.slot)));
    },
    async refund(request) {
      const now = request.now ?? Date.now();
      const counts = await clientOf(request, now);
      refundLocally(counts, request, now);
      touchDecided(counts);
    },
    async reset(namespace, key, policies) {
      const counts = table.find(namespace, key, policies);
      // A reset carries no clock: the windows are those of the client's last decision here, or
      // of the latest decision this store made (an injected clock's time), or the host's.
      const now = counts?.lastNow ?? (latestNow > 0 ? latestNow : Date.now());
      const keys = policies.flatMap((policy) => {
        const window = windowOf(policy, now);
        return [windowKey(namespace, key, policy, window), windowKey(namespace, key, policy, window - 1)];
      });
      // The client's counts stand until the deletion is made: forgotten first, a reset Redis
      // never took (its limiter told so under 'throw') still gave the client a fresh quota here.
      if (counts !== undefined) counts.resetting++;
      try {
        // Bounded as a sync is, waits and all: the limiter sets no timer on a store that decides
        // in-process. Calls under way to the client's node (a sync's, a first read's) may carry
        // its count from before: they land first, then the deletion, which they would otherwise
        // undo. Another master's, frozen or not, are no concern of this client's.
        await withTimeout(async (expired) => {
          await running?.catch(() => {});
          await settledOn(counts?.slot ?? slotOf(namespace, key));
          await untilReady(client);
          if (!expired()) await client.del(...keys);
        }, syncTimeoutMs);
      } catch (error) {
        if (counts !== undefined) {
          counts.resetting--;
          // Its totals go out again at the next sync, as before the reset.
          table.touch(counts);
        }
        throw error;
      }
      if (counts !== undefined) table.forget(counts);
    },
    sync: syncNow,
    status: () => ({
      clients: table.size,
      slotsDown: reachability.slotsDown(),
      failedCalls: reachability.failedCalls(),
    }),
    async close() {
      clearInterval(timer);
      // Whoever waits for room waits for this last sync at most.
      closed = true;
      await syncNow();
    },
  };
}
