import {
  algorithms,
  decide,
  type Evaluation,
  type Policy,
  type PolicyOutcome,
  type RateLimitStore,
  refundStates,
  SluiceError,
  type State,
  type StoreReply,
  type StoreRequest,
} from '@sluice/core';
import { LRUCache } from 'lru-cache';
import {
  type Entry,
  findSegment,
  MAX_NAMESPACES,
  overwriteState,
  readState,
  readStates,
  removeSegment,
  writeSegment,
} from './entry.js';

export const DEFAULT_MAX_KEYS = 100_000;

export interface MemoryStoreOptions {
  /** Most client keys tracked at once; one key holds the state of every limiter for that client. @default 100000 */
  maxKeys?: number;
}

export interface MemoryStore extends RateLimitStore {
  /** Client keys tracked now; never more than `maxKeys`. */
  readonly size: number;
  consumeSync(request: StoreRequest): StoreReply;
  consumeOneSync(request: StoreRequest): PolicyOutcome;
}

const noStates: readonly State[] = [];

/**
 * The embedded default store: decisions run in-process on core's reference algorithms.
 *
 * Eviction: least recently used first, and only when `maxKeys` keys are held. A key is
 * evicted only after `maxKeys` other keys have been used since its own last use, so a client
 * that keeps sending requests is never evicted; an evicted key starts again from a fresh
 * state. Expiry is lazy: a state past its reset time reads exactly like a fresh one, and is
 * dropped when a peek or refund finds it so. No timer runs, per key or otherwise.
 *
 * @example
 * const limiter = createLimiter({ limit: 100, window: '1m', store: createMemoryStore({ maxKeys: 50_000 }) });
 */
export function createMemoryStore(options: MemoryStoreOptions = {}): MemoryStore {
  for (const key of Object.keys(options)) {
    if (key !== 'maxKeys')
      throw new SluiceError('ERR_SLUICE_UNKNOWN_OPTION', `[sluice] Unknown memory store option \`${key}\`.`);
  }
  const maxKeys = options.maxKeys ?? DEFAULT_MAX_KEYS;
  if (!Number.isSafeInteger(maxKeys) || maxKeys <= 0 || maxKeys > 2 ** 30) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_MAX_KEYS',
      `[sluice] Option \`maxKeys\` must be a whole number from 1 to 2^30; received ${String(maxKeys)}.`,
    );
  }
  const cache = new LRUCache<string, Entry>({ max: maxKeys });
  // Without options of its own, every `get` allocates them and gives them a new shape: a
  // reused object makes the lookup markedly cheaper. lru-cache writes a diagnostics `status`
  // into it when its metrics channel has subscribers; clearing it keeps that per call.
  const getOptions: { status?: LRUCache.Status<string, Entry> | undefined } = {};
  const lookUp = (key: string): Entry | undefined => {
    const entry = cache.get(key, getOptions as LRUCache.GetOptions<string, Entry, unknown>);
    getOptions.status = undefined;
    return entry;
  };
  const namespaceIds = new Map<string, number>();

  let lastNamespace = '';
  let lastId = -1;
  const idOf = (namespace: string): number => {
    if (namespace === lastNamespace) return lastId;
    let id = namespaceIds.get(namespace);
    if (id === undefined) {
      if (namespaceIds.size >= MAX_NAMESPACES)
        throw new SluiceError('ERR_SLUICE_INVALID_PREFIX', '[sluice] Too many limiters share one memory store.');
      id = namespaceIds.size;
      namespaceIds.set(namespace, id);
    }
    lastNamespace = namespace;
    lastId = id;
    return id;
  };

  /** Writes the client's segment, keeping the entry in the cache if it had to be replaced. */
  const write = (
    key: string,
    entry: Entry | undefined,
    at: number,
    id: number,
    states: readonly State[],
    policies: readonly Policy[],
  ) => {
    const kept = writeSegment(entry, at, id, states, policies);
    if (kept !== entry) cache.set(key, kept);
  };

  /** Stores the segment, or drops it when every state has gone back to fresh. */
  const keep = (
    key: string,
    entry: Entry | undefined,
    at: number,
    id: number,
    states: readonly State[],
    request: StoreRequest,
    outcomes: readonly PolicyOutcome[],
  ): void => {
    if (outcomes.every((o) => o.resetAfterMs === 0)) {
      if (entry !== undefined && at >= 0 && !removeSegment(entry, at)) cache.delete(key);
      return;
    }
    write(key, entry, at, id, states, request.policies);
  };

  /**
   * A one-policy request decided as `decide` would, without its arrays and copies: the
   * limiter's fast path. The evaluation is returned as it is; callers read its outcome fields.
   */
  const decideOne = (request: StoreRequest, now: number): Evaluation => {
    const { key, policies, cost } = request;
    const policy = policies[0] as Policy;
    const id = idOf(request.namespace);
    const entry = lookUp(key);
    const at = entry === undefined ? -1 : findSegment(entry, id);
    const state = at < 0 ? undefined : readState(entry as Entry, at + 1, policy.algorithm);
    const evaluation = algorithms[policy.algorithm].evaluate(state, policy, request.capacities[0] as number, cost, now);
    if (evaluation.allowed && cost > 0) {
      if (!overwriteState(entry, at, evaluation.next, policy.algorithm))
        write(key, entry, at, id, [evaluation.next], policies);
    } else if (at >= 0 && cost === 0) {
      keep(key, entry, at, id, [state as State], request, [evaluation]);
    }
    return evaluation;
  };

  const consumeSync = (request: StoreRequest): StoreReply => {
    const now = request.now ?? Date.now();
    if (request.policies.length === 1) {
      const evaluation = decideOne(request, now);
      return { allowed: evaluation.allowed, now, outcomes: [outcomeOf(evaluation)] };
    }
    const id = idOf(request.namespace);
    const entry = lookUp(request.key);
    const at = entry === undefined ? -1 : findSegment(entry, id);
    const states = at < 0 ? noStates : readStates(entry as Entry, at, request.policies);
    const reply = decide(states, request.policies, request.capacities, request.cost, now);
    if (reply.next !== undefined) {
      write(request.key, entry, at, id, reply.next, request.policies);
    } else if (at >= 0 && request.cost === 0) {
      keep(request.key, entry, at, id, states, request, reply.outcomes);
    }
    return { allowed: reply.allowed, now, outcomes: reply.outcomes };
  };

  return {
    name: 'memory',
    local: true,
    get size() {
      return cache.size;
    },
    consumeSync,
    consumeOneSync: (request) => decideOne(request, request.now ?? Date.now()),
    consume: (request) => Promise.resolve(consumeSync(request)),

    refund(request) {
      const now = request.now ?? Date.now();
      const id = idOf(request.namespace);
      const entry = lookUp(request.key);
      const at = entry === undefined ? -1 : findSegment(entry, id);
      if (at >= 0) {
        const { policies, capacities } = request;
        const refunded = refundStates(
          readStates(entry as Entry, at, policies),
          policies,
          capacities,
          request.cost,
          now,
        );
        const states = refunded.map((s, i) => s ?? fresh(policies[i] as Policy, capacities[i] as number, now));
        keep(request.key, entry, at, id, states, request, decide(states, policies, capacities, 0, now).outcomes);
      }
      return Promise.resolve();
    },

    reset(namespace, key) {
      const entry = cache.peek(key);
      const at = entry === undefined ? -1 : findSegment(entry, idOf(namespace));
      if (at >= 0 && !removeSegment(entry as Entry, at)) cache.delete(key);
      return Promise.resolve();
    },
  };
}

const fresh = (policy: Policy, capacity: number, now: number): State =>
  algorithms[policy.algorithm].evaluate(undefined, policy, capacity, 0, now).next;

/** The outcome fields alone: a reply carries no algorithm's private state. */
const outcomeOf = ({ allowed, remaining, resetAfterMs, retryAfterMs, delayMs }: PolicyOutcome): PolicyOutcome => ({
  allowed,
  remaining,
  resetAfterMs,
  retryAfterMs,
  delayMs,
});
