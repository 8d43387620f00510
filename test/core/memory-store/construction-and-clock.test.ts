import { toPolicy } from '@sluice/core';
import { createMemoryStore } from '@sluice/memory';
import { describe, expect, it } from 'vitest';

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
