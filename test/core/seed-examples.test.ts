import { type AlgorithmName, algorithms, createLimiter, type Duration, toPolicy } from '@sluice/core';
import { createMemoryStore } from '@sluice/memory';
import { describe, expect, it } from 'vitest';
import { manualClock } from '../helpers/clock.js';

const MINUTE = 60_000;
/** 00:00 of some day, so the articles' clock readings map straight onto aligned windows. */
const MIDNIGHT = 19_700 * 86_400_000;
const at = (minutes: number, seconds = 0) => MIDNIGHT + minutes * MINUTE + seconds * 1_000;

function limiter(limit: number, window: Duration, algorithm: AlgorithmName, start = MIDNIGHT) {
  const clock = manualClock(start);
  return {
    clock,
    limiter: createLimiter({ limit, window, algorithm, clock, store: createMemoryStore({ maxKeys: 10 }) }),
  };
}

describe('worked examples from the articles: the windows', () => {
  it('sliding window counter: 88 in the previous minute, 12 in this one, 15 s in → estimate 78, allowed at 100', async () => {
    const clock = manualClock(100 * MINUTE);
    const limiter = createLimiter({
      limit: 100,
      window: '1m',
      algorithm: 'sliding-window-counter',
      clock,
      store: createMemoryStore(),
    });
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

  it('sliding window counter (seed 000): 9 then 5 at 10/min, at 00:01:15 → 9 × 0.75 + 5 = 14.75, refused', () => {
    // Under this very limit the 5 could not all have passed by 00:01:15, so the article's
    // state is written down directly: [window index, current count, previous count].
    const policy = toPolicy({ limit: 10, window: '1m', algorithm: 'sliding-window-counter' }, 'policy');
    const state = [Math.floor(at(1) / MINUTE), 5, 9];
    const refused = algorithms['sliding-window-counter'].evaluate(state, policy, 10, 1, at(1, 15));
    expect(refused).toMatchObject({ allowed: false, remaining: 0 });
    // It passes once 9 × (60 − s)/60 + 5 + 1 ≤ 10, i.e. at s ≥ 33.333… s: 00:01:33.334.
    expect(refused.retryAfterMs).toBe(18_334);
    // Neither window alone is over the limit. With nothing yet in this one, 9 × 0.75 = 6.75
    // leaves room for a request of cost 3 but not 4.
    const swc = algorithms['sliding-window-counter'];
    const quiet = [state[0] as number, 0, 9];
    expect(swc.evaluate(quiet, policy, 10, 3, at(1, 15)).allowed).toBe(true);
    expect(swc.evaluate(quiet, policy, 10, 4, at(1, 15)).allowed).toBe(false);
  });

  it('fixed window (seed 000): at 2/min, 00:00:24 and 00:00:36 pass, 00:00:49 is refused, 00:01:12 passes', async () => {
    const { clock, limiter: fw } = limiter(2, '1m', 'fixed-window');
    const verdicts: boolean[] = [];
    for (const t of [at(0, 24), at(0, 36), at(0, 49), at(1, 12)]) {
      clock.set(t);
      verdicts.push((await fw.consume('k')).allowed);
    }
    expect(verdicts).toEqual([true, true, false, true]);
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

  it.each([
    ['fixed-window', [true, true, true, true]],
    ['sliding-window-log', [true, true, false, false]],
  ] as const)('2/min at 00:00:58, :59, 00:01:01, :02 (seed 000): %s → %j', async (algorithm, expected) => {
    const { clock, limiter: l } = limiter(2, '1m', algorithm);
    const verdicts: boolean[] = [];
    for (const t of [at(0, 58), at(0, 59), at(1, 1), at(1, 2)]) {
      clock.set(t);
      verdicts.push((await l.consume('k')).allowed);
    }
    expect(verdicts).toEqual(expected);
  });

  it('5/s with 5 requests at 0.9 s and 5 at 1.0 s (seed 003): the fixed window passes 10, the log 5', async () => {
    for (const [algorithm, expected] of [
      ['fixed-window', 10],
      ['sliding-window-log', 5],
    ] as const) {
      const { clock, limiter: l } = limiter(5, '1s', algorithm);
      let passed = 0;
      clock.set(MIDNIGHT + 900);
      for (let i = 0; i < 5; i++) if ((await l.consume('k')).allowed) passed++;
      clock.set(MIDNIGHT + 1_000);
      for (let i = 0; i < 5; i++) if ((await l.consume('k')).allowed) passed++;
      expect(passed).toBe(expected);
    }
  });

  it('sliding log (seed 002): at 2/min, 01:00 and 01:20 pass, 01:45 is refused until 02:00, 02:25 passes', async () => {
    const { clock, limiter: log } = limiter(2, '1m', 'sliding-window-log');
    clock.set(at(1, 0));
    expect((await log.consume('k')).allowed).toBe(true);
    clock.set(at(1, 20));
    expect((await log.consume('k')).allowed).toBe(true);
    clock.set(at(1, 45));
    const refused = await log.consume('k');
    expect(refused.allowed).toBe(false);
    // The request of 01:00 leaves the window at 02:00. Unlike the article's log, ours never
    // records a refused request, so a client retrying is not locked out for longer.
    expect(refused.retryAfterMs).toBe(15_000);
    clock.set(at(2, 25));
    expect(await log.consume('k')).toMatchObject({ allowed: true, remaining: 1 });
  });

  it('soft throttling (seed 002): 500 per minute with 5 % over lets 525 through, the last 25 marked', async () => {
    const clock = manualClock(MIDNIGHT);
    const soft = createLimiter({
      limit: 500,
      window: '1m',
      algorithm: 'fixed-window',
      throttle: { mode: 'soft', overagePercent: 5 },
      clock,
      store: createMemoryStore({ maxKeys: 10 }),
    });
    const marks: (string | undefined)[] = [];
    for (let i = 0; i < 530; i++) {
      const decision = await soft.consume('k');
      if (decision.allowed) marks.push(decision.overLimit);
    }
    expect(marks).toHaveLength(525);
    expect(marks.filter((m) => m === 'soft')).toHaveLength(25);
  });
});
