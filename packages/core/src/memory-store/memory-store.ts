import { decide, type Evaluation, refundStates } from '../algorithms/index.js';
import { SluiceError } from '../errors.js';
import type { Policy, PolicyOutcome, RateLimitStore, StoreReply, StoreRequest } from '../types.js';
import { nowOf } from './checks.js';
import {
  type Entry,
  findSegment,
  HEAD,
  overwriteState,
  readStateOnce,
  readStates,
  removeSegment,
  segmentsOf,
  writeSegment,
} from './entry.js';
import { createLayouts, type Layout, type Layouts } from './layouts.js';
import { LruMap } from './lru.js';
import { type MemoryState, memoryAlgorithms } from './sliding-log.js';
import { type TakenOver, takeOver } from './take-over.js';

export const DEFAULT_MAX_KEYS = 100_000;

export interface MemoryStoreOptions {
  /** Most client keys tracked at once; one key holds the state of every limiter for that client. @default 100000 */
  maxKeys?: number;
}

export interface MemoryStore extends RateLimitStore {
  /** Client keys tracked now; never more than `maxKeys`. */
  readonly size: number;
  /** Keys evicted so far to stay within `maxKeys` (for metrics: `@sluice/otel`); stores over one index share the count. */
  readonly evictions: number;
  consumeSync(request: StoreRequest): StoreReply;
  consumeOneSync(request: StoreRequest): PolicyOutcome;
}

const noStates: readonly MemoryState[] = [];

/**
 * The embedded default store: decisions run in-process on core's reference algorithms; the
 * sliding log on a mirror of its reference that appends to the log instead of copying it.
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
  const maxKeys = options.maxKeys === undefined ? DEFAULT_MAX_KEYS : options.maxKeys;
  if (!Number.isSafeInteger(maxKeys) || maxKeys <= 0 || maxKeys > 2 ** 30) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_MAX_KEYS',
      `[sluice] Option \`maxKeys\` must be a whole number from 1 to 2^30; received ${String(maxKeys)}.`,
    );
  }
  return memoryStoreOver(createMemoryTable(maxKeys));
}

/** What memory stores over one LRU index share: the client keys, the layouts of their segments, and evictions. */
export interface MemoryTable {
  readonly cache: LruMap<Entry>;
  readonly layouts: Layouts;
  evictions: number;
}

export const createMemoryTable = (maxKeys: number): MemoryTable => ({
  cache: new LruMap<Entry>(maxKeys),
  layouts: createLayouts(),
  evictions: 0,
});

/**
 * A memory store over `table`. Stores over one table share its keys and its `maxKeys` bound;
 * each files its namespaces under its own `scope`, so a limiter's namespace in one store never
 * meets the same namespace in another: each counts as if it had a store to itself.
 */
export function memoryStoreOver(table: MemoryTable, scope = ''): MemoryStore {
  const { cache } = table;
  // One reused state array per size, for the one-policy path's evaluation (see readStateOnce).
  const scratch = [[], [0], [0, 0], [0, 0, 0]];
  const { layouts } = table;
  // A namespace as this store files it in the table: its own, when stores share one.
  let lastNamespace = '';
  let lastFiled = '';
  const filed =
    scope === ''
      ? (namespace: string) => namespace
      : (namespace: string) => {
          if (namespace !== lastNamespace) {
            lastNamespace = namespace;
            lastFiled = `${namespace}/${scope}`;
          }
          return lastFiled;
        };

  /** Writes the client's segment, keeping the entry in the cache if it had to be replaced. */
  const write = (
    key: string,
    entry: Entry | undefined,
    at: number,
    id: number,
    states: readonly MemoryState[],
    policies: readonly Policy[],
  ) => {
    const kept = writeSegment(entry, at, id, states, policies);
    if (kept === entry) return;
    // A key not held yet pushes the least recently used one out of a full cache.
    if (entry === undefined && cache.size === cache.max) table.evictions++;
    cache.set(key, kept);
  };

  /** Replaces what other versions left with this layout's states, and the slots it lacks. */
  const replace = (key: string, entry: Entry, layout: Layout, taken: TakenOver, states: readonly MemoryState[]) => {
    for (const at of taken.offsets) removeSegment(entry, at);
    write(key, entry, -1, layout.id, states, layout.policies);
    if (taken.extras.length > 0) {
      write(key, entry, -1, layouts.of(layout.namespace, taken.extras).id, taken.extraStates, taken.extras);
    }
  };

  /** A decision on states another version of the limiter left; written only when charged. */
  const decideTakenOver = (request: StoreRequest, entry: Entry, layout: Layout, taken: TakenOver, now: number) => {
    const reply = decide(taken.states, request.policies, request.capacities, request.cost, now, memoryAlgorithms);
    if (reply.next !== undefined) replace(request.key, entry, layout, taken, reply.next);
    return reply;
  };

  /** Stores the segment, or drops it when every state has gone back to fresh. */
  const keep = (
    key: string,
    entry: Entry | undefined,
    at: number,
    id: number,
    states: readonly MemoryState[],
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
  const decideOne = (request: StoreRequest, now: number): Evaluation<MemoryState> => {
    const { key, policies, cost } = request;
    const policy = policies[0] as Policy;
    const layout = layouts.of(filed(request.namespace), policies);
    const { id } = layout;
    const entry = cache.get(key);
    const at = entry === undefined ? -1 : findSegment(entry, id);
    if (at < 0 && entry !== undefined) {
      const taken = takeOver(entry, layout, layouts, now);
      if (taken !== undefined)
        return decideTakenOver(request, entry, layout, taken, now).outcomes[0] as Evaluation<MemoryState>;
    }
    const state = at < 0 ? undefined : readStateOnce(entry as Entry, at, at + HEAD, policy.algorithm, scratch);
    const algorithm = memoryAlgorithms[policy.algorithm];
    const evaluation = algorithm.evaluate(state, policy, request.capacities[0] as number, cost, now);
    if (evaluation.allowed && cost > 0) {
      if (!overwriteState(entry, at, evaluation.next, policy.algorithm))
        write(key, entry, at, id, [evaluation.next], policies);
    } else if (at >= 0 && cost === 0) {
      keep(key, entry, at, id, [state as MemoryState], request, [evaluation]);
    }
    return evaluation;
  };

  const consumeSync = (request: StoreRequest): StoreReply => {
    const now = nowOf(request);
    if (request.policies.length === 1) {
      const evaluation = decideOne(request, now);
      return { allowed: evaluation.allowed, now, outcomes: [outcomeOf(evaluation)] };
    }
    const layout = layouts.of(filed(request.namespace), request.policies);
    const { id } = layout;
    const entry = cache.get(request.key);
    const at = entry === undefined ? -1 : findSegment(entry, id);
    if (at < 0 && entry !== undefined) {
      const taken = takeOver(entry, layout, layouts, now);
      if (taken !== undefined) {
        const { allowed, outcomes } = decideTakenOver(request, entry, layout, taken, now);
        return { allowed, now, outcomes };
      }
    }
    const states = at < 0 ? noStates : readStates(entry as Entry, at, request.policies);
    const reply = decide(states, request.policies, request.capacities, request.cost, now, memoryAlgorithms);
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
    get evictions() {
      return table.evictions;
    },
    consumeSync,
    consumeOneSync: (request) => decideOne(request, nowOf(request)),
    consume: (request) => Promise.resolve(consumeSync(request)),

    refund(request) {
      const now = nowOf(request);
      const layout = layouts.of(filed(request.namespace), request.policies);
      const { id } = layout;
      const { policies, capacities } = request;
      const entry = cache.get(request.key);
      const at = entry === undefined ? -1 : findSegment(entry, id);
      const taken = at < 0 && entry !== undefined ? takeOver(entry, layout, layouts, now) : undefined;
      if (at < 0 && taken === undefined) return Promise.resolve();
      const current = taken === undefined ? readStates(entry as Entry, at, policies) : taken.states;
      const refunded = refundStates(current, policies, capacities, request.cost, now, memoryAlgorithms);
      const states = refunded.map((s, i) => s ?? fresh(policies[i] as Policy, capacities[i] as number, now));
      if (taken !== undefined) replace(request.key, entry as Entry, layout, taken, states);
      else {
        const { outcomes } = decide(states, policies, capacities, 0, now, memoryAlgorithms);
        keep(request.key, entry, at, id, states, request, outcomes);
      }
      return Promise.resolve();
    },

    reset(namespace, key) {
      const entry = cache.peek(key);
      if (entry === undefined) return Promise.resolve();
      // Every version's states under the namespace, and any a forgotten layout left.
      for (const [at, id] of segmentsOf(entry).reverse()) {
        const layout = layouts.byId(id);
        if (layout === undefined || layout.namespace === filed(namespace)) removeSegment(entry, at);
      }
      if (entry.length === 0) cache.delete(key);
      return Promise.resolve();
    },
  };
}

const fresh = (policy: Policy, capacity: number, now: number): MemoryState =>
  memoryAlgorithms[policy.algorithm].evaluate(undefined, policy, capacity, 0, now).next;

/** The outcome fields alone: a reply carries no algorithm's private state. */
const outcomeOf = ({ allowed, remaining, resetAfterMs, retryAfterMs, delayMs }: PolicyOutcome): PolicyOutcome => ({
  allowed,
  remaining,
  resetAfterMs,
  retryAfterMs,
  delayMs,
});
