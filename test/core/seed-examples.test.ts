import { createLimiter } from '@sluice/core';
import { createMemoryStore } from '@sluice/memory';
import { describe, expect, it } from 'vitest';
import { manualClock } from '../helpers/clock.js';

const MINUTE = 60_000;

describe('worked examples from the articles', () => {
  it('sliding window counter: 88 in the previous minute, 12 in this one, 15 s in → estimate 78, allowed at 100', async () => {
    const clock = manualClock(100 * MINUTE);
    const limiter = createLimiter({ limit: 100, window: '1m', algorithm: 'sliding-window-counter', clock, store: createMemoryStore() });
    for (let i = 0; i < 88; i++) expect((await limiter.consume('k')).allowed).toBe(true);
    clock.set(101 * MINUTE);
    for (let i = 0; i < 12; i++) expect((await limiter.consume('k')).allowed).toBe(true);
    clock.set(101 * MINUTE + 15_000);
    const peek = await limiter.peek('k');
    // 88 × 45/60 + 12 = 78, so 22 remain before this request.
    expect(peek.remaining).toBe(22);
    const decision = await limiter.consume('k');
    expect(decision.allowed).toBe(true);
    expect(decision.remaining).toBe(21);
  });

  it('fixed window lets 2 × limit through around a boundary; the sliding log does not', async () => {
    const run = async (algorithm: 'fixed-window' | 'sliding-window-log') => {
      const clock = manualClock(10 * MINUTE + 59_000);
      const limiter = createLimiter({ limit: 10, window: '1m', algorithm, clock, store: createMemoryStore() });
      let passed = 0;
      for (let i = 0; i < 10; i++) if ((await limiter.consume('k')).allowed) passed++;
      clock.advance(2_000);
      for (let i = 0; i < 10; i++) if ((await limiter.consume('k')).allowed) passed++;
      return passed;
    };
    expect(await run('fixed-window')).toBe(20);
    expect(await run('sliding-window-log')).toBe(10);
  });

  it('token bucket of capacity 3 refilled 3 per minute', async () => {
    const clock = manualClock(0);
    const limiter = createLimiter({
      limit: 3, window: '1m', algorithm: 'token-bucket', refillAmount: 3, refillInterval: '1m', clock, store: createMemoryStore(),
    });
    expect((await limiter.consume('k')).allowed).toBe(true);
    clock.advance(10_000);
    expect((await limiter.consume('k')).allowed).toBe(true);
    expect((await limiter.consume('k')).allowed).toBe(true);
    const fourth = await limiter.consume('k');
    expect(fourth.allowed).toBe(false);
    expect(fourth.retryAfterMs).toBe(50_000);
    clock.advance(50_000);
    for (let i = 0; i < 3; i++) expect((await limiter.consume('k')).allowed).toBe(true);
    expect((await limiter.consume('k')).allowed).toBe(false);
  });
});
