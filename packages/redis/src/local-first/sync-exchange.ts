import { randomUUID } from 'node:crypto';
import type { Policy } from '@sluice/core';
import type { Cluster } from 'ioredis';
import { type RedisClient, untilReady } from '../client.js';
import { clientSlot } from '../keys.js';
import {
  applySync,
  type ClientCounts,
  firstKeptWindow,
  ownCount,
  type PolicyCounts,
  windowOf,
} from './client-counts.js';
import { defineSyncScript, SYNC_KEY_COUNTS } from './sync-script.js';

/** Keys per sync call, as many as the script is registered for: a slot with more clients takes several calls. */
const KEYS_PER_CALL = SYNC_KEY_COUNTS[SYNC_KEY_COUNTS.length - 1] as number;
/**
 * Calls of one exchange out at once. Each call's timeout runs from when it is sent, so a large
 * sync is a series of short calls, each bounded, rather than a queue whose tail waits for
 * all the calls before it; a few at once keep every master of a cluster busy.
 */
const CALLS_IN_FLIGHT = 4;

/** One policy of one client in a call: what it sent, and where its sums are in the reply. */
interface Slice {
  client: ClientCounts;
  policy: number;
  window: number;
  sent: [number, number];
  /** Whether the call carries the window before `window` (a sliding counter reads it). */
  withPrevious: boolean;
  /** Index of its first sum in the call's reply. */
  at: number;
}

interface Call {
  slot: number;
  keys: string[];
  args: string[];
  slices: Slice[];
}

/** What an exchange learnt of each slot it called: answered, or the first failure. */
export interface ExchangeOutcome {
  answered: Set<number>;
  failed: Map<number, unknown>;
  /** Clients of the calls that failed or were not sent, and those a reset holds: their totals are written at the next sync. */
  unwritten: Set<ClientCounts>;
}

/** A local-first store's exchange with Redis: its window keys, and the sync of some clients' counts. */
export function createSyncExchange(client: RedisClient, prefix: string) {
  const run = defineSyncScript(client);
  const onCluster = (client as { isCluster?: boolean }).isCluster === true;
  const processId = randomUUID();

  // A window's key names the policy's slot and window length, not its version: a change of
  // limit or algorithm (both count units per window) reads and adds to the same counts, so it
  // never starts a client afresh (SPEC §4).
  const windowKey = (namespace: string, key: string, policy: Policy, window: number) =>
    `${prefix}lf:{${namespace}|${key}}:${policy.slot}@${policy.windowMs}:${window}`;
  // Limiters with the same policies share one count per client here (`policySet`), so one field
  // per process and policy set: two sets meeting in a key (a rules reload) each keep their own
  // total, where one field would hold whichever wrote last. And one per time this process met
  // the client (`incarnation`): met again after it was forgotten, it counts from 0 beside the
  // total it wrote before, never over it.
  const fieldOf = (counts: ClientCounts) => `${processId}:${counts.policySet}:${counts.incarnation}`;
  /** The hash slot of every key of a client (they share its hash tag); 0 off a cluster. */
  const slotOf = (namespace: string, key: string) => (onCluster ? clientSlot(namespace, key) : 0);
  /**
   * Calls past their timeout whose replies are still owed, per node: a node that owes late
   * replies (a frozen Redis keeps its connections open) is sent nothing more until it answers,
   * as a Redis too slow for one sync would only be sent more, while the other masters of a
   * cluster go on. A call still within its time is no sign of trouble: a first read and the
   * timer's sync run side by side, each with calls out.
   */
  const late = new Map<string, number>();
  /**
   * The slots of those calls: one moved to another master since (a reshard) is still owed
   * there, by a reply ioredis redirects (MOVED) and runs after whatever the slot's new master
   * was sent meanwhile, its totals then older than a sync's. So a slot that owes one is sent
   * nothing, wherever it now lives.
   */
  const lateSlots = new Map<number, number>();
  /** Calls sent and not yet settled, per node, late ones included (see `settledOn`). */
  const unanswered = new Map<string, Set<Promise<void>>>();
  const counted = <K>(owed: Map<K, number>, key: K, change: 1 | -1): void => {
    const now = (owed.get(key) ?? 0) + change;
    if (now === 0) owed.delete(key);
    else owed.set(key, now);
  };
  const oweLate = (node: string, slot: number, change: 1 | -1): void => {
    counted(late, node, change);
    counted(lateSlots, slot, change);
  };
  /** Why a call to `slot` on `node` is held back: an overdue call the node, or the slot, still owes. */
  const owed = (node: string, slot: number): Error | undefined => {
    if (late.has(node)) return new Error(`${node} has not answered earlier calls`);
    if (lateSlots.has(slot)) return new Error(`slot ${slot} has not answered earlier calls`);
    return undefined;
  };
  /** The master serving a slot, as the client last learnt it; the slot itself when not known. */
  const nodeOf = (slot: number): string =>
    onCluster ? ((client as Cluster).slots[slot]?.[0] ?? `slot ${slot}`) : 'redis';

  /**
   * The targets' windows that still matter at `latestNow`, in calls of one slot each. A client
   * whose reset is under way goes in `held`, written by none: the reset's deletion must be
   * the last word, and the client stays to be written (and is never forgotten for room) until
   * the reset has either been made or failed.
   */
  const callsFor = (targets: readonly ClientCounts[], latestNow: number, held: Set<ClientCounts>): Call[] => {
    const open = new Map<number, Call>();
    const calls: Call[] = [];
    for (const counts of targets) {
      if (counts.resetting > 0) {
        held.add(counts);
        continue;
      }
      const field = fieldOf(counts);
      counts.policies.forEach((policy, i) => {
        const own = counts.counts[i] as PolicyCounts;
        const window = windowOf(policy, counts.lastNow);
        const kept = firstKeptWindow(policy, latestNow);
        // A window over everywhere is never read again: its key would only expire.
        if (window < kept) return;
        const withPrevious = policy.algorithm === 'sliding-window-counter' && window - 1 >= kept;
        const sent: [number, number] = [ownCount(own, window), ownCount(own, window - 1)];
        let call = open.get(counts.slot);
        if (call === undefined || call.keys.length + 2 > KEYS_PER_CALL) {
          call = { slot: counts.slot, keys: [], args: [], slices: [] };
          open.set(counts.slot, call);
          calls.push(call);
        }
        // A window's count matters until the end of the next one (a sliding counter's previous).
        const ttl = String(2 * policy.windowMs + 1000);
        call.slices.push({ client: counts, policy: i, window, sent, withPrevious, at: call.keys.length });
        call.keys.push(windowKey(counts.namespace, counts.key, policy, window));
        call.args.push(field, String(sent[0]), ttl);
        if (withPrevious) {
          call.keys.push(windowKey(counts.namespace, counts.key, policy, window - 1));
          call.args.push(field, String(sent[1]), ttl);
        }
      });
    }
    return calls;
  };

  const applyReply = (call: Call, sums: number[]): void => {
    for (const { client: counts, policy, window, sent, withPrevious, at } of call.slices) {
      // A window not carried is one nobody reads again: this process's own count stands for it.
      const previous = withPrevious ? (sums[at + 1] as number) : sent[1];
      applySync(
        counts.policies[policy] as Policy,
        counts.counts[policy] as PolicyCounts,
        window,
        [sums[at] as number, previous],
        sent,
      );
    }
  };

  /**
   * Writes the targets' totals and reads the fleet's back, one slot per call, a few calls at a
   * time, each within `timeoutMs` of being sent (the wait for a first connection included).
   * A call that answered counts whatever the others do; a failed call's clients are written
   * again at the next sync, and the rest of its node is not sent: each call would only wait out
   * its own timeout behind it (a frozen master of a cluster held a sync for a fifth of a second
   * per four of its slots, the slots of the masters that answered waiting behind them, at full
   * share and unsynced). Once `stopped()` says so (a first read past its bound), no call is
   * sent: its clients stay to be written and read at the next sync, and its slot is not taken
   * for down (a burst of 60,000 new clients on a Redis that answers takes 118 calls, past
   * 200 ms), unless its node fails or owes an overdue call by the time the exchange ends.
   */
  const exchange = (
    targets: readonly ClientCounts[],
    latestNow: number,
    timeoutMs: number,
    stopped: () => boolean = never,
  ): Promise<ExchangeOutcome> => {
    const result: ExchangeOutcome = { answered: new Set(), failed: new Map(), unwritten: new Set() };
    const calls = callsFor(targets, latestNow, result.unwritten);
    const failedNodes = new Map<string, unknown>();
    /** Why a call to `slot` on `node` goes unsent: its node failed in this exchange, or an overdue call holds it. */
    const heldBack = (node: string, slot: number): unknown => failedNodes.get(node) ?? owed(node, slot);
    let next = 0;
    /** Calls left unsent once the exchange stopped. */
    const unsent: Call[] = [];
    const worker = async (): Promise<void> => {
      while (next < calls.length) {
        const call = calls[next++] as Call;
        const node = nodeOf(call.slot);
        const failure = heldBack(node, call.slot);
        if (failure !== undefined) {
          // Not sent: its node failed this exchange, or owes an overdue call, or its slot does.
          // The slot is out of reach with it.
          if (!result.failed.has(call.slot)) result.failed.set(call.slot, failure);
        } else if (stopped()) {
          // Not sent; its slot fails only if its node fails before the exchange ends (below).
          unsent.push(call);
        } else if (!result.failed.has(call.slot)) {
          // Whether the call's reply came, and whether it was late: its settling runs before
          // the timeout race hears of it.
          let settled = false;
          let overdue = false;
          try {
            await withTimeout((expired) => {
              const reply = send(call, expired);
              const out = unanswered.get(node) ?? new Set();
              unanswered.set(node, out.add(reply));
              const settle = () => {
                settled = true;
                out.delete(reply);
                if (out.size === 0 && unanswered.get(node) === out) unanswered.delete(node);
                if (overdue) oweLate(node, call.slot, -1);
              };
              reply.then(settle, settle);
              return reply;
            }, timeoutMs);
            result.answered.add(call.slot);
            continue;
          } catch (error) {
            if (error !== NOT_SENT) {
              if (!settled) {
                overdue = true;
                oweLate(node, call.slot, 1);
              }
              // Another call of the slot may have failed meanwhile: the first failure is kept.
              if (!result.failed.has(call.slot)) result.failed.set(call.slot, error);
              // A reply of Redis's own (an error about a key) says the node answers.
              if (!isReplyError(error) && !failedNodes.has(node)) failedNodes.set(node, error);
            }
          }
        }
        // Failed, or not sent (the exchange stopped, or its slot or node failed): the totals
        // are kept and written again at the next sync, which counts them once.
        for (const slice of call.slices) result.unwritten.add(slice.client);
      }
    };
    const send = async (call: Call, expired: () => boolean): Promise<void> => {
      await untilReady(client);
      // Settled as failed meanwhile: its clients are marked to be written again; leave them so.
      if (expired()) return;
      if (stopped()) throw NOT_SENT;
      applyReply(call, await run(call.keys, call.args));
    };
    const workers = Array.from({ length: Math.min(CALLS_IN_FLIGHT, calls.length) }, worker);
    return Promise.all(workers).then(() => {
      // A node that failed after a call of its was left unsent (its first call timing out while
      // the others' held the exchange open), or that now owes an overdue call of a sync beside
      // this exchange, has those slots out of reach too: their clients are decided at the
      // outage share, as its other slots' are.
      for (const call of unsent) {
        const failure = heldBack(nodeOf(call.slot), call.slot);
        if (failure !== undefined && !result.failed.has(call.slot)) result.failed.set(call.slot, failure);
      }
      return result;
    });
  };

  /**
   * Settles once every call sent so far to the node serving `slot` has settled, late replies
   * included: a reset's deletion goes after any that may carry its client's count from before,
   * whatever another master of a cluster still owes.
   */
  const settledOn = (slot: number): Promise<unknown> => Promise.allSettled([...(unanswered.get(nodeOf(slot)) ?? [])]);

  return { windowKey, slotOf, exchange, settledOn };
}

const never = (): boolean => false;
/** A call the exchange stopped before sending (`stopped`): no sign of trouble at its node. */
const NOT_SENT = new Error('not sent: the exchange was stopped');

/** An error reply from Redis (ioredis's `ReplyError`), not a timeout or a lost connection. */
const isReplyError = (error: unknown): boolean => error instanceof Error && error.name === 'ReplyError';

/**
 * `work`, or a rejection once `ms` have passed; a later failure of `work` is absorbed by the
 * race. `work` is told whether its time is up (`expired`): it must write nothing once the caller
 * has been told it failed, as a DEL sent when a first connection opens late would wipe counts
 * written since.
 */
export function withTimeout(work: (expired: () => boolean) => Promise<unknown>, ms: number): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  let expired = false;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      // Not yet: a reply that came while the event loop was busy is read in the poll phase,
      // which runs before `setImmediate`'s, and wins the race. Only a missing one times out.
      setImmediate(() => {
        expired = true;
        reject(new Error(`no reply within ${ms} ms`));
      });
    }, ms);
  });
  return Promise.race([work(() => expired), timeout]).finally(() => clearTimeout(timer));
}
