import {
  algorithms,
  checkOptionNames,
  type Policy,
  type PolicyOutcome,
  SluiceError,
  type StoreReply,
  type StoreRequest,
  safeWhenHeld as safeWhenHeldImport,
  storeKey,
} from '@sluice/core';

// A module's own constant: optimised code calls it as it is, where it checks an imported
// binding's temporal dead zone and identity on every lookup.
const safeWhenHeld = safeWhenHeldImport;

/** How many refused clients a store remembers by default (a few hundred bytes each). */
export const DEFAULT_DENY_CACHE_KEYS = 10_000;

/**
 * Refusals kept per client key, one per limiter: beyond it the oldest is dropped. Without it a
 * key one limiter keeps refusing would carry every other limiter's refusal for ever (tiers,
 * rules reloads), past what `maxKeys` promises. A dropped refusal only means asking Redis.
 */
export const DENY_CACHE_REFUSALS_PER_KEY = 8;

export interface DenyCacheOptions {
  /** Refused client keys remembered at once; the least recently refused are dropped first. @default 10000 */
  maxKeys?: number | undefined;
}

interface Refusal {
  /** The limiter's namespace: one client key may be refused by several limiters of one store. */
  readonly namespace: string;
  /** The client key, made safe: what the refusal is kept under. */
  readonly key: string;
  readonly policies: readonly Policy[];
  readonly capacities: readonly number[];
  readonly cost: number;
  /** When the refused request was sent, on the clock its `now` came from (local or injected). */
  readonly sentAt: number;
  /** Redis's (or the injected) time of the decision. */
  readonly decidedAt: number;
  readonly outcomes: readonly PolicyOutcome[];
  /** How long after `sentAt` every policy is sure to refuse the same request again. */
  readonly spanMs: number;
  /** The same client's refusal by another limiter (namespace), if any. */
  next: Refusal | undefined;
}

/**
 * Remembers refusals so that a client refused once is refused again in-process, without a
 * Redis call, until the refusal's wait is over. It changes no decision: nothing but time,
 * a refund or a reset makes a refused request pass, refusals charge nothing, and every charge
 * made through this store, and every refund or reset made through any store over its client
 * and prefix, forgets the client. Only a refund or reset made by another process (or another
 * client object) meanwhile is missed, until the cached wait ends (README, "Deny cache").
 *
 * A refusal is kept only when its reply can be replayed exactly: the same cost, policies and
 * capacities; every policy refused with `remaining = cost − 1`. A policy's remaining never
 * falls while nothing is charged, and a refusal means it is below the cost, so it stays at
 * `cost − 1` until the wait ends; waits and resets are instants, replayed by subtracting the
 * time elapsed. Other refusals (one policy still allowing, a remaining below `cost − 1`) would
 * show drifting figures, so they go to Redis as before.
 */
export interface DenyCache {
  /** The refusal Redis would give, or undefined to ask Redis. */
  lookup(request: StoreRequest): StoreReply | undefined;
  /**
   * `lookup` for `decideAtOnce`: the client key as the caller gave it (made safe here unless
   * held as it is), and the reply written into objects the cache reuses for its next such
   * lookup, for a caller that reads it at once: a refused client costs no allocation here.
   */
  lookupGiven(request: StoreRequest): StoreReply | undefined;
  /** Learns from a reply to a request sent at `sentAt`. */
  learn(request: StoreRequest, sentAt: number, reply: StoreReply): void;
  /** Forgets a client: its state is about to change through this store (refund, reset). */
  forget(namespace: string, key: string): void;
}

export function createDenyCache(options: DenyCacheOptions): DenyCache {
  checkOptionNames(options, ['maxKeys'], 'deny cache');
  // Keyed by the client key alone, which is usually the very string object of the request's
  // address, hashed once: a `namespace|key` string built per lookup cost more than the rest
  // of a cached refusal. A client refused by several limiters has one entry per namespace.
  // A Map keeps its keys in the order they were set, and each refusal is set anew: its first
  // key is the least recently refused, dropped beyond the bound. A lookup moves nothing, so it
  // is one `Map.get` (an LRU cache's `get` also relinks, and allocates its options).
  const maxKeys = checkMaxKeys(options.maxKeys);
  const refusals = new Map<string, Refusal>();
  const keep = (key: string, refusal: Refusal): void => {
    refusals.delete(key);
    refusals.set(key, refusal);
    if (refusals.size > maxKeys) refusals.delete(refusals.keys().next().value as string);
  };

  const reused: StoreReply = { allowed: false, now: 0, outcomes: [] };

  const find = (namespace: string, key: string): Refusal | undefined => {
    let refusal = refusals.get(key);
    while (refusal !== undefined && refusal.namespace !== namespace) refusal = refusal.next;
    return refusal;
  };

  /** The refusal kept for a client key as the caller gave it. */
  const findGiven = (namespace: string, given: string): Refusal | undefined => {
    const held = safeWhenHeld(given) ? find(namespace, given) : undefined;
    if (held !== undefined) return held;
    const key = storeKey(given);
    return key === given ? undefined : find(namespace, key);
  };

  /** `refusal`'s reply to `request`, written into `reply`; undefined once its wait is over. */
  const replay = (refusal: Refusal | undefined, request: StoreRequest, reply: StoreReply) => {
    if (refusal === undefined || !sameRequest(refusal, request)) return undefined;
    // Whole: the difference of two epoch times is boxed as a heap number even when small, and
    // one such value written to a reply turns that field of every decision after it boxed (an
    // allocation each, slower headers). `Math.trunc` hands it on as a small integer.
    const elapsed = Math.trunc((request.now ?? Date.now()) - refusal.sentAt);
    if (elapsed < 0 || elapsed >= refusal.spanMs) {
      if (elapsed >= refusal.spanMs) forget(refusal.namespace, refusal.key);
      return undefined;
    }
    reply.now = refusal.decidedAt + elapsed;
    const { outcomes } = reply;
    // Written only when it changes: setting an array's length calls into the runtime.
    if (outcomes.length !== refusal.outcomes.length) outcomes.length = refusal.outcomes.length;
    for (let i = 0; i < outcomes.length; i++) {
      const cached = refusal.outcomes[i] as PolicyOutcome;
      let outcome = outcomes[i];
      if (outcome === undefined) {
        outcome = { allowed: false, remaining: 0, resetAfterMs: 0, retryAfterMs: 0, delayMs: 0 };
        outcomes[i] = outcome;
      }
      outcome.remaining = cached.remaining;
      outcome.resetAfterMs = Math.max(0, cached.resetAfterMs - elapsed);
      outcome.retryAfterMs = cached.retryAfterMs - elapsed;
    }
    return reply;
  };

  const forget = (namespace: string, key: string): void => {
    if (refusals.size === 0) return;
    const first = refusals.get(key);
    if (first === undefined) return;
    if (first.namespace === namespace) {
      if (first.next === undefined) refusals.delete(key);
      else refusals.set(key, first.next);
      return;
    }
    for (let before = first; before.next !== undefined; before = before.next) {
      if (before.next.namespace === namespace) {
        before.next = before.next.next;
        return;
      }
    }
  };

  return {
    // Nothing refused lately, the usual state of a store whose clients keep within their
    // limits: every lookup and every charge's forgetting ends at the count.
    lookup(request) {
      if (refusals.size === 0) return undefined;
      const reply = { allowed: false, now: 0, outcomes: [] };
      return replay(find(request.namespace, request.key), request, reply);
    },

    lookupGiven(request) {
      if (refusals.size === 0) return undefined;
      return replay(findGiven(request.namespace, request.key), request, reused);
    },

    learn(request, sentAt, reply) {
      const { namespace, key } = request;
      if (reply.allowed) {
        // A charge changes the state every remembered figure was read from.
        if (request.cost > 0) forget(namespace, key);
        return;
      }
      forget(namespace, key);
      const spanMs = replayableFor(request, reply.outcomes);
      if (spanMs > 0) {
        const { policies, capacities, cost } = request;
        const next = refusals.get(key);
        const refusal = {
          namespace,
          key,
          policies,
          capacities,
          cost,
          sentAt,
          decidedAt: reply.now,
          outcomes: reply.outcomes,
          spanMs,
          next,
        };
        keep(key, refusal);
        let last: Refusal = refusal;
        for (let kept = 1; kept < DENY_CACHE_REFUSALS_PER_KEY && last.next !== undefined; kept++) last = last.next;
        last.next = undefined;
      }
    },

    forget,
  };
}

/** How long a refusal can be replayed exactly: the shortest wait, or 0 if it cannot be. */
function replayableFor({ policies, capacities, cost }: StoreRequest, outcomes: readonly PolicyOutcome[]): number {
  let span = Number.POSITIVE_INFINITY;
  for (let i = 0; i < outcomes.length; i++) {
    const outcome = outcomes[i] as PolicyOutcome;
    if (outcome.allowed || outcome.remaining !== cost - 1) return 0;
    // A cost even a fresh state refuses has no wait that is an instant: core reports it apart.
    const policy = policies[i] as Policy;
    if (!algorithms[policy.algorithm].evaluate(undefined, policy, capacities[i] as number, cost, 0).allowed) return 0;
    span = Math.min(span, outcome.retryAfterMs);
  }
  return span;
}

function sameRequest(refusal: Refusal, request: StoreRequest): boolean {
  if (refusal.cost !== request.cost) return false;
  const { policies, capacities } = request;
  // A limiter asks with the same two lists every time (its capacities change only under an
  // elastic throttle): the very lists need no comparison item by item.
  if (policies === refusal.policies && capacities === refusal.capacities) return true;
  if (policies.length !== refusal.policies.length) return false;
  for (let i = 0; i < policies.length; i++) {
    if (policies[i] !== refusal.policies[i] || capacities[i] !== refusal.capacities[i]) return false;
  }
  return true;
}

function checkMaxKeys(maxKeys: unknown): number {
  if (maxKeys === undefined) return DEFAULT_DENY_CACHE_KEYS;
  if (typeof maxKeys !== 'number' || !Number.isSafeInteger(maxKeys) || maxKeys < 1 || maxKeys > 10_000_000) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `[sluice] Option \`denyCache.maxKeys\` must be a whole number from 1 to 10000000; received ${String(maxKeys)}.`,
    );
  }
  return maxKeys;
}
