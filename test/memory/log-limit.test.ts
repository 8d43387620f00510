import { createLimiter } from '@sluice/core';
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
