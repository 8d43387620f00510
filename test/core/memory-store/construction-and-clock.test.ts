import { createLimiter, toPolicy } from '@sluice/core';
import { createMemoryStore, MAX_MEMORY_LOG_LIMIT } from '@sluice/memory';
import { describe, expect, it } from 'vitest';

describe('a sliding-window-log on the memory store', () => {
  // Its log lives in the client's entry and each decision copies it: past the limit the
  // cost per decision is refused at construction instead of paid at every request.
  it(`is refused at construction above ${MAX_MEMORY_LOG_LIMIT} entries, naming the policy`, () => {
    const log = { algorithm: 'sliding-window-log', window: '1d' } as const;
    expect(() => createLimiter({ ...log, limit: MAX_MEMORY_LOG_LIMIT, store: createMemoryStore() })).not.toThrow();
    expect(() =>
      createLimiter({
        policies: [{ ...log, name: 'daily', limit: MAX_MEMORY_LOG_LIMIT + 1 }],
        store: createMemoryStore(),
      }),
    ).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_LIMIT', message: expect.stringContaining('"daily"') }),
    );
  });
});

describe('the memory store checks the time it is given, as the Redis store does', () => {
  // It used to accept a NaN clock: fixed-window then admitted 20 of 20 with a limit of 3.
  it.each([Number.NaN, 1.5, -1])('refuses now = %s with ERR_SLUICE_INVALID_CLOCK', (now) => {
    const store = createMemoryStore();
    const policies = [toPolicy({ limit: 3, window: '1m', algorithm: 'fixed-window' }, 'options')];
    const request = { namespace: 'ns', key: 'k', policies, capacities: [3], cost: 1, now };
    expect(() => store.consumeSync(request)).toThrow(expect.objectContaining({ code: 'ERR_SLUICE_INVALID_CLOCK' }));
    expect(() => store.consumeOneSync(request)).toThrow(expect.objectContaining({ code: 'ERR_SLUICE_INVALID_CLOCK' }));
  });
});
