import type { Policy, StoreRequest } from '@sluice/core';
import { type ClientCounts, type Ending, newClientCounts, overAt } from './client-counts.js';
import { SLOTS } from './reachability.js';

/**
 * Clients a sync forgets at least, once their windows are over: more when it wrote more, so
 * forgetting keeps pace with new clients, yet 100,000 clients of one window never end in one sync.
 */
const FORGETS_PER_SYNC = 1024;

/** Every limiter's clients with one set of policies, by namespace and client key. */
interface PolicySet {
  /** The set's number in this process, part of its field in Redis. */
  readonly number: number;
  readonly namespaces: Map<string, Map<string, ClientCounts>>;
}

/**
 * The clients a local-first store knows, at most `maxKeys` of them, kept so that a sync costs
 * what changed since the last one, not what is known. Each client is on one list at most:
 *
 * - the **touched list**, once decided on since the last sync, which that sync takes whole;
 * - an **ending**, once a sync wrote all its counts: the clients whose windows are all over by
 *   one time, least recently used first. A sync forgets over ones a slice at a time, and a full
 *   table forgets the least recently used of them: what it counted is in Redis already;
 * - none while its read or its sync call is on the way.
 */
export function createClientTable(
  maxKeys: number,
  syncIntervalMs: number,
  /** Resolves once the next sync has ended: true unless it failed (or none will come). */
  syncEnd: () => Promise<boolean>,
) {
  // Per policy set, not per limiter: limiters given the same prefix and policies share a count
  // on purpose, and a reload's new limiter keeps every client's. Then by namespace and client
  // key, in levels: a `namespace|key` string built per decision would cost the decision more
  // than its count.
  const policySets = new Map<string, PolicySet>();
  const setOfPolicies = new WeakMap<readonly Policy[], PolicySet>();
  const setsByNumber: PolicySet[] = [];
  const endings = new Map<number, Ending>();
  // Clients per hash slot: a slot's outage is forgotten once it holds none (`keepOnly`).
  const inSlot = new Uint32Array(SLOTS);
  let size = 0;
  let incarnations = 0;
  let round = 0;
  let firstTouched: ClientCounts | undefined;

  // The clients of the last limiter and namespace asked for: an app's limiter asks with the
  // same two every time, and two map lookups cost a decision more than its count does.
  let lastPolicies: readonly Policy[] | undefined;
  let lastNamespace = '';
  let lastClients: Map<string, ClientCounts> | undefined;

  const signatureOf = (policies: readonly Policy[]): string =>
    policies.map((policy) => `${policy.slot}@${policy.version}`).join(',');

  const policySetOf = (policies: readonly Policy[]): PolicySet => {
    let set = setOfPolicies.get(policies);
    if (set === undefined) {
      const signature = signatureOf(policies);
      set = policySets.get(signature);
      if (set === undefined) {
        set = { number: setsByNumber.length, namespaces: new Map() };
        setsByNumber.push(set);
        policySets.set(signature, set);
      }
      setOfPolicies.set(policies, set);
    }
    return set;
  };

  const unfile = (counts: ClientCounts): void => {
    const ending = counts.ending;
    if (ending === undefined) return;
    if (counts.prev === undefined) ending.first = counts.next;
    else counts.prev.next = counts.next;
    if (counts.next === undefined) ending.last = counts.prev;
    else counts.next.prev = counts.prev;
    counts.prev = undefined;
    counts.next = undefined;
    counts.ending = undefined;
    if (ending.first === undefined) endings.delete(ending.endsAt);
  };

  /** Files a client whose counts are all written under the sync interval its windows end in. */
  const file = (counts: ClientCounts): void => {
    // No sync could forget it sooner: one ending per interval, however short the windows.
    const endsAt = Math.ceil(overAt(counts) / syncIntervalMs) * syncIntervalMs;
    let ending = endings.get(endsAt);
    if (ending === undefined) {
      ending = { endsAt, first: undefined, last: undefined };
      endings.set(endsAt, ending);
    }
    counts.ending = ending;
    counts.prev = ending.last;
    if (ending.last === undefined) ending.first = counts;
    else ending.last.next = counts;
    ending.last = counts;
  };

  /** Drops a client from the table; what still holds it sees it `gone`. */
  const forget = (counts: ClientCounts): void => {
    if (counts.gone) return;
    counts.gone = true;
    unfile(counts);
    const set = setsByNumber[counts.policySet] as PolicySet;
    const clients = set.namespaces.get(counts.namespace) as Map<string, ClientCounts>;
    clients.delete(counts.key);
    size--;
    inSlot[counts.slot] = (inSlot[counts.slot] as number) - 1;
    if (clients.size === 0) {
      set.namespaces.delete(counts.namespace);
      // The map `clientsOf` remembers may be this one; it is found again when next asked.
      lastPolicies = undefined;
    }
  };

  /** Forgets the least recently used client among those whose counts Redis holds, if any. */
  const evictOne = (): boolean => {
    let oldest: ClientCounts | undefined;
    for (const { first } of endings.values()) {
      if (oldest === undefined || (first as ClientCounts).round < oldest.round) oldest = first;
    }
    if (oldest === undefined) return false;
    forget(oldest);
    return true;
  };

  const insert = (request: StoreRequest, now: number, slot: number): ClientCounts => {
    const set = policySetOf(request.policies);
    let clients = set.namespaces.get(request.namespace);
    if (clients === undefined) {
      clients = new Map<string, ClientCounts>();
      set.namespaces.set(request.namespace, clients);
    }
    const counts = newClientCounts(request, now, set.number, slot, incarnations++);
    clients.set(request.key, counts);
    size++;
    inSlot[slot] = (inSlot[slot] as number) + 1;
    return counts;
  };

  /** A client's counts, by the set's signature too: a limiter that has not decided yet (a reset through a reloaded one) finds what another with the same policies counted. */
  const find = (namespace: string, key: string, policies: readonly Policy[]): ClientCounts | undefined =>
    (setOfPolicies.get(policies) ?? policySets.get(signatureOf(policies)))?.namespaces.get(namespace)?.get(key);

  return {
    /** Clients whose counts are kept here now. */
    get size(): number {
      return size;
    },
    /** The limiter's clients under the request's namespace, if any are known here. */
    clientsOf(request: StoreRequest): Map<string, ClientCounts> | undefined {
      if (request.policies !== lastPolicies || request.namespace !== lastNamespace) {
        const clients = setOfPolicies.get(request.policies)?.namespaces.get(request.namespace);
        if (clients === undefined) return undefined;
        lastPolicies = request.policies;
        lastNamespace = request.namespace;
        lastClients = clients;
      }
      return lastClients;
    },

    /** Whether the client may decide on what it knows: decided on or read in this round or the last. */
    isFresh: (counts: ClientCounts): boolean => counts.round >= round - 1,

    /** Puts a client decided on (or read) on the touched list, for the next sync to write and read. */
    touch(counts: ClientCounts): void {
      if (counts.touched || counts.gone) return;
      unfile(counts);
      counts.touched = true;
      counts.round = round;
      counts.next = firstTouched;
      firstTouched = counts;
    },

    /** Whether a client was decided on since the last sync took the touched list. */
    hasTouched: (): boolean => firstTouched !== undefined,

    /** Whether a client decided on since the last sync took the touched list passes `test`. */
    someTouched(test: (counts: ClientCounts) => boolean): boolean {
      for (let counts = firstTouched; counts !== undefined; counts = counts.next) if (test(counts)) return true;
      return false;
    },

    /** Keeps a client out of every ending while its read is on the way: it is neither forgotten nor evicted. */
    hold: unfile,

    /**
     * The request's client, added when new. A full table first forgets its least recently used
     * written client; with none, the request waits for the sync that writes some (which the
     * store starts at once). One that
     * reached no Redis leaves the table over its bound: forgetting a count Redis has not got
     * would let its client start afresh.
     */
    async admit(request: StoreRequest, now: number, slotOf: () => number): Promise<ClientCounts> {
      for (;;) {
        // By the set's signature: another limiter with the same policies may know the client.
        const known = policySetOf(request.policies).namespaces.get(request.namespace)?.get(request.key);
        if (known !== undefined) return known;
        if (size < maxKeys || evictOne() || !(await syncEnd())) return insert(request, now, slotOf());
      }
    },

    find,
    forget,

    /**
     * Starts a sync round: takes the touched list, forgets its clients whose windows are all
     * over (written or not: a failed sync's counts are not kept past their windows) and a
     * slice of the written ones whose windows are over, and returns the rest to write and read.
     */
    takeTouched(latestNow: number): ClientCounts[] {
      round++;
      const targets: ClientCounts[] = [];
      let counts = firstTouched;
      firstTouched = undefined;
      while (counts !== undefined) {
        const next = counts.next;
        counts.next = undefined;
        counts.touched = false;
        if (!counts.gone) {
          if (overAt(counts) <= latestNow) forget(counts);
          else targets.push(counts);
        }
        counts = next;
      }
      let budget = Math.max(FORGETS_PER_SYNC, targets.length);
      for (const ending of endings.values()) {
        if (ending.endsAt > latestNow) continue;
        while (ending.first !== undefined && budget-- > 0) forget(ending.first);
        if (budget <= 0) break;
      }
      return targets;
    },

    /**
     * After a sync: its targets not touched again meanwhile have all their counts in Redis. A
     * table an outage left over its bound forgets, least recently used first, the clients now
     * written, down to the bound: it only ever forgot one per new client, and stayed over it
     * until their windows ended.
     */
    written(targets: readonly ClientCounts[]): void {
      for (const counts of targets) if (!counts.touched && !counts.gone) file(counts);
      while (size > maxKeys && evictOne()) {}
    },

    /** The hash slots that hold a client now. */
    slotsInUse: { has: (slot: number): boolean => inSlot[slot] !== 0 },
  };
}

export type ClientTable = ReturnType<typeof createClientTable>;
