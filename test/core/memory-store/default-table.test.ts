import { createLimiter } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import { defaultMemoryStore } from '../../../packages/core/src/memory-store/default-store.js';
import { manualClock } from '../../helpers/clock.js';

// The middleware default (issue 13): one LRU index per process instead of one per middleware.
describe('the default memory stores', () => {
  it('hands out stores over one index that count apart under the same namespace', async () => {
    const clock = manualClock();
    const first = defaultMemoryStore();
    const second = defaultMemoryStore();
    expect(first).not.toBe(second);
    const before = first.size;
    const a = createLimiter({ limit: 1, window: '1m', clock, store: first, prefix: 'same' });
    const b = createLimiter({ limit: 1, window: '1m', clock, store: second, prefix: 'same' });
    expect((await a.consume('shared-table-client')).allowed).toBe(true);
    expect((await b.consume('shared-table-client')).allowed).toBe(true);
    expect((await a.consume('shared-table-client')).allowed).toBe(false);
    // One client, one entry holding both limiters' states, seen by both stores.
    expect(first.size).toBe(before + 1);
    expect(second.size).toBe(first.size);
  });
});
