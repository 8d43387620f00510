import { createLimiter } from '@sluice/core';
import { createMemoryStore } from '@sluice/memory';
import { describe, expect, it } from 'vitest';
import { manualClock } from '../helpers/clock.js';

describe('the top-level figures describe the policy closest to exhaustion', () => {
  it('measures a bucket whose burst exceeds its limit against its burst, not its limit', async () => {
    const clock = manualClock();
    const limiter = createLimiter({
      policies: [
        { name: 'burst', limit: 20, window: '1s', algorithm: 'gcra', burst: 40 },
        { name: 'daily', limit: 1000, window: '1d', algorithm: 'fixed-window' },
      ],
      clock,
      store: createMemoryStore(),
    });
    let decision = await limiter.consume('k');
    // 39 of 40 left (97.5 %) against 999 of 1000 (99.9 %): the bucket is the headline,
    // although 39 is more than its limit of 20.
    expect(decision.remaining).toBe(39);
    expect(decision.limit).toBe(20);
    for (let i = 0; i < 30; i++) decision = await limiter.consume('k');
    expect(decision.remaining).toBe(9);
  });

  it('breaks a tie in share left by the longer time to restore', async () => {
    const clock = manualClock(0);
    const limiter = createLimiter({
      policies: [
        { name: 'minute', limit: 10, window: '1m', algorithm: 'fixed-window' },
        { name: 'hour', limit: 10, window: '1h', algorithm: 'fixed-window' },
      ],
      clock,
      store: createMemoryStore(),
    });
    const decision = await limiter.consume('k');
    expect(decision.remaining).toBe(9);
    expect(decision.resetAfterMs).toBe(3_600_000);
  });
});
