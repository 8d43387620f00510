import { createLimiter, createMemoryStore } from '@sluice/core';
import { rateLimit } from '@sluice/express';

/** Each case creates its `i`-th limiter; distinct limits give each its own policies. */
export const CASES: Readonly<Record<string, (i: number) => unknown>> = {
  'rateLimit(), no store': (i: number) => rateLimit({ limit: 10 + i, window: '1m' }),
  'rateLimit(), a memory store each': (i: number) =>
    rateLimit({ limit: 10 + i, window: '1m', store: createMemoryStore() }),
  'createLimiter(), no store': (i: number) => createLimiter({ limit: 10 + i, window: '1m' }),
  'createLimiter(), one store for all': (i: number) =>
    createLimiter({ limit: 10 + i, window: '1m', store: sharedStore }),
};

const sharedStore = createMemoryStore();
