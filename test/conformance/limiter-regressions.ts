import { randomUUID } from 'node:crypto';
import { type AlgorithmName, algorithmNames, createLimiter, type RateLimitStore } from '@sluice/core';
import { expect, it } from 'vitest';
import { manualClock } from '../helpers/clock.js';

const START_MS = 1_700_000_000_000;
const MINUTE = 60_000;

/** A namespace no other test of the run uses. */
const freshPrefix = () => `t-${randomUUID().slice(0, 13)}`;

/**
 * Defects found by hostile testing, each reproduced through a limiter on every store: declare
 * it inside a store's `describe`, next to `storeConformance`.
 */
export function limiterRegressions(store: () => RateLimitStore) {
  it('keys differing only in lone surrogates no longer share one counter', async () => {
    const limiter = createLimiter({
      limit: 1,
      window: '1m',
      store: store(),
      prefix: freshPrefix(),
      clock: () => START_MS,
    });
    const keys = ['\ud800', '\udbff', '\udc00', '\ufffd', 'a\ud800', 'a\udc00', 'a\ufffd', '\ud800\udc00'];
    for (const key of keys) expect((await limiter.consume(key)).allowed, JSON.stringify(key)).toBe(true);
    for (const key of keys) expect((await limiter.consume(key)).allowed, JSON.stringify(key)).toBe(false);
  });

  it.each(algorithmNames)(
    '%s: a clock step back of one window or more never admits more (fixed-window admitted 3x its limit)',
    async (algorithm: AlgorithmName) => {
      // 50 s into a minute, so +5 s is still the same window.
      const clock = manualClock(START_MS + 30_000);
      const limiter = createLimiter({
        limit: 3,
        window: '1m',
        algorithm,
        store: store(),
        prefix: freshPrefix(),
        clock,
      });
      const admitted = async (n: number) => {
        let passed = 0;
        for (let i = 0; i < n; i++) if ((await limiter.consume('k')).allowed) passed++;
        return passed;
      };
      expect(await admitted(5)).toBe(3);
      for (const back of [1, 2, 5]) {
        clock.set(START_MS + 30_000 - back * MINUTE);
        expect(await admitted(5), `${back} windows back`).toBe(0);
      }
      // The clock returns to the window already exhausted: still nothing more in it.
      clock.set(START_MS + 35_000);
      expect(await admitted(5)).toBe(0);
    },
  );
}
