import { createLimiter } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import { manualClock } from '../../helpers/clock.js';

// Regression: core used to load its default store with an `import()` of `@sluice/memory`.
// With core alone installed (or in a bundle) that failed, and every request passed.
describe('the default store of createLimiter', () => {
  it('limits from the first call with nothing but core', async () => {
    const clock = manualClock();
    const limiter = createLimiter({ limit: 2, window: '1m', clock });
    const decisions = [await limiter.consume('a'), await limiter.consume('a'), await limiter.consume('a')];
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, false]);
    expect(decisions.map((d) => d.reason)).toEqual([undefined, undefined, undefined]);
  });

  it('is a new store per limiter: the same prefix shares no counts without a shared store', async () => {
    const first = createLimiter({ limit: 1, window: '1m', prefix: 'login' });
    const second = createLimiter({ limit: 1, window: '1m', prefix: 'login' });
    expect((await first.consume('a')).allowed).toBe(true);
    expect((await second.consume('a')).allowed).toBe(true);
  });
});
