import { createLimiter, type LimiterOptions } from '@sluice/core';
import { createMemoryStore } from '@sluice/memory';
import { describe, expect, it } from 'vitest';
import { manualClock } from '../helpers/clock.js';

function limiter(options: LimiterOptions) {
  const clock = manualClock(0);
  return { clock, limiter: createLimiter({ ...options, clock, store: createMemoryStore({ maxKeys: 10 }) }) };
}

describe('worked examples from the articles: the buckets', () => {
  it('token bucket of capacity 3 refilled 3 per minute, all at once (seed 002)', async () => {
    const { clock, limiter: tb } = limiter({
      limit: 3,
      window: '1m',
      algorithm: 'token-bucket',
      refillAmount: 3,
      refillInterval: '1m',
    });
    expect((await tb.consume('k')).allowed).toBe(true);
    clock.advance(10_000);
    expect((await tb.consume('k')).allowed).toBe(true);
    expect((await tb.consume('k')).allowed).toBe(true);
    const fourth = await tb.consume('k');
    expect(fourth.allowed).toBe(false);
    expect(fourth.retryAfterMs).toBe(50_000);
    clock.advance(50_000);
    for (let i = 0; i < 3; i++) expect((await tb.consume('k')).allowed).toBe(true);
    expect((await tb.consume('k')).allowed).toBe(false);
  });

  it('the same bucket refilled continuously gets a token every 20 s (0.33 min, seed 002)', async () => {
    const { clock, limiter: tb } = limiter({ limit: 3, window: '1m', algorithm: 'token-bucket' });
    for (let i = 0; i < 3; i++) expect((await tb.consume('k')).allowed).toBe(true);
    const fourth = await tb.consume('k');
    expect(fourth).toMatchObject({ allowed: false, retryAfterMs: 20_000, resetAfterMs: 60_000 });
    clock.advance(19_999);
    expect((await tb.consume('k')).allowed).toBe(false);
    clock.advance(1);
    expect((await tb.consume('k')).allowed).toBe(true);
  });

  it('a full bucket can pass 4 in 40 s at 3 per minute, as the article’s "edges" example says', async () => {
    const { clock, limiter: tb } = limiter({ limit: 3, window: '1m', algorithm: 'token-bucket' });
    // The bucket has filled up by 1:00; a burst empties it, and the token of 1:20 passes too.
    clock.set(60_000);
    for (let i = 0; i < 3; i++) expect((await tb.consume('k')).allowed).toBe(true);
    clock.set(80_000);
    expect((await tb.consume('k')).allowed).toBe(true);
  });

  it('5 tokens refilled 5 per second, a request every 100 ms (seed 004): 5 pass, 5 blocked, and again', async () => {
    const { clock, limiter: tb } = limiter({
      limit: 5,
      window: '1s',
      algorithm: 'token-bucket',
      refillAmount: 5,
      refillInterval: '1s',
    });
    const verdicts: boolean[] = [];
    for (let i = 0; i < 30; i++) {
      verdicts.push((await tb.consume('k')).allowed);
      clock.advance(100);
    }
    const second = [true, true, true, true, true, false, false, false, false, false];
    expect(verdicts).toEqual([...second, ...second, ...second]);
  });

  it('the leaky bucket of seed 000 (one request per 1000/rate ms) is gcra with a burst of 1', async () => {
    for (const algorithm of ['gcra', 'leaky-bucket'] as const) {
      const { clock, limiter: lb } = limiter({ limit: 10, window: '1s', burst: 1, algorithm });
      expect((await lb.consume('k')).allowed).toBe(true);
      clock.advance(99);
      expect(await lb.consume('k')).toMatchObject({ allowed: false, retryAfterMs: 1 });
      clock.advance(1);
      expect((await lb.consume('k')).allowed).toBe(true);
    }
  });

  it('the leaky bucket as a queue (seeds 000, 003): a burst is smoothed to the outflow rate', async () => {
    const { limiter: queue } = limiter({
      limit: 10,
      window: '1s',
      burst: 1,
      algorithm: 'leaky-bucket',
      queue: { maxDelayMs: '1s' },
    });
    const delays: number[] = [];
    for (let i = 0; i < 12; i++) {
      const decision = await queue.consume('k');
      delays.push(decision.allowed ? decision.delayMs : -1);
    }
    expect(delays).toEqual([0, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1_000, -1]);
  });
});
