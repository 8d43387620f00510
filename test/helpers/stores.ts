import type { RateLimitStore } from '@sluice/core';
import { createMemoryStore } from '@sluice/memory';

/** The memory store without its synchronous paths: every decision takes the promise path, as a remote store's does. */
export function promiseStore(name = 'remote'): RateLimitStore {
  const inner = createMemoryStore();
  return { name, consume: inner.consume, reset: inner.reset, refund: inner.refund };
}

/** A store whose every call rejects with `error`. */
export function failingStore(error: unknown, name = 'down'): RateLimitStore {
  return {
    name,
    consume: () => Promise.reject(error),
    reset: () => Promise.reject(error),
    refund: () => Promise.reject(error),
  };
}
