import {
  decide,
  type RateLimitStore,
  refundStates,
  SluiceError,
  type State,
  type StoreReply,
  type StoreRequest,
} from '@sluice/core';
import { LRUCache } from 'lru-cache';

export const DEFAULT_MAX_KEYS = 100_000;

export interface MemoryStoreOptions {
  /**
   * Most client keys tracked at once (each key holds the state of every policy of one
   * limiter). @default 100000
   */
  maxKeys?: number;
}

export interface MemoryStore extends RateLimitStore {
  /** Client keys tracked now; never more than `maxKeys`. */
  readonly size: number;
}

/** States of every policy of one limiter for one client, and when they all read as fresh. */
interface Entry {
  expiresAt: number;
  states: (State | undefined)[];
}

/**
 * The embedded default store: decisions run in-process on core's reference algorithms.
 *
 * Eviction: least recently used first, and only when `maxKeys` keys are held. A key is
 * evicted only after `maxKeys` other keys have been used since its own last use, so a client
 * that keeps sending requests is never evicted; an evicted key starts again from a fresh
 * state. Expiry is lazy: a state past its reset time reads as fresh and is dropped when next
 * touched. No timer runs, per key or otherwise, so there is nothing to close.
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

  const load = (id: string, now: number): (State | undefined)[] | undefined => {
    const entry = cache.get(id);
    if (entry === undefined) return undefined;
    if (entry.expiresAt > now) return entry.states;
    cache.delete(id);
    return undefined;
  };

  const save = (id: string, states: (State | undefined)[], expiresAfterMs: number, now: number): void => {
    if (expiresAfterMs > 0) cache.set(id, { expiresAt: now + expiresAfterMs, states });
    else cache.delete(id);
  };

  return {
    name: 'memory',
    local: true,
    get size() {
      return cache.size;
    },

    consume(request: StoreRequest): Promise<StoreReply> {
      const now = request.now ?? Date.now();
      const id = `${request.namespace}|${request.key}`;
      const reply = decide(load(id, now) ?? [], request.policies, request.capacities, request.cost, now);
      if (reply.next !== undefined) save(id, reply.next, longest(reply.outcomes), now);
      return Promise.resolve({ allowed: reply.allowed, now, outcomes: reply.outcomes });
    },

    refund(request: StoreRequest): Promise<void> {
      const now = request.now ?? Date.now();
      const id = `${request.namespace}|${request.key}`;
      const states = load(id, now);
      if (states !== undefined) {
        const next = refundStates(states, request.policies, request.capacities, request.cost, now);
        const reply = decide(next, request.policies, request.capacities, 0, now);
        save(id, next, longest(reply.outcomes), now);
      }
      return Promise.resolve();
    },

    reset(namespace: string, key: string): Promise<void> {
      cache.delete(`${namespace}|${key}`);
      return Promise.resolve();
    },
  };
}

const longest = (outcomes: readonly { resetAfterMs: number }[]): number =>
  outcomes.reduce((most, o) => Math.max(most, o.resetAfterMs), 0);
