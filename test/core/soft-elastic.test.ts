import { type AlgorithmName, createLimiter, type Decision, type LimiterOptions } from '@sluice/core';
import { createMemoryStore } from '@sluice/memory';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { manualClock } from '../helpers/clock.js';
import { START } from './support/meter.js';

const WINDOW = 60_000;

function limiterWith(options: Partial<LimiterOptions> & { limit: number; algorithm: AlgorithmName }) {
  const clock = manualClock(START - (START % WINDOW));
  const limiter = createLimiter({
    window: WINDOW,
    clock,
    store: createMemoryStore({ maxKeys: 10 }),
    ...options,
  } as LimiterOptions);
  return { limiter, clock };
}

/** Every decision of a greedy burst at one instant, up to and including the first refusal. */
async function burst(limiter: ReturnType<typeof createLimiter>, key = 'k'): Promise<Decision[]> {
  const decisions: Decision[] = [];
  for (let i = 0; i < 100_000; i++) {
    const decision = await limiter.consume(key);
    decisions.push(decision);
    if (!decision.allowed) return decisions;
  }
  throw new Error('never refused');
}

describe('soft throttling', () => {
  it.each(['fixed-window', 'sliding-window-log', 'sliding-window-counter'] as const)(
    '%s admits exactly ⌊L × (1 + p/100)⌋ per window, marking only the overage, remaining against L',
    async (algorithm) => {
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: 1, max: 60 }), fc.integer({ min: 1, max: 3_000 }), async (limit, tenths) => {
          const overagePercent = tenths / 10;
          const ceiling = Math.floor((limit * (1_000 + tenths)) / 1_000);
          const { limiter, clock } = limiterWith({ limit, algorithm, throttle: { mode: 'soft', overagePercent } });
          // Three windows in a row, each started far enough from the last for it to be forgotten.
          for (let window = 0; window < 3; window++) {
            const decisions = await burst(limiter);
            const admitted = decisions.filter((d) => d.allowed);
            expect(admitted).toHaveLength(ceiling);
            admitted.forEach((d, i) => {
              expect(d.overLimit).toBe(i < limit ? undefined : 'soft');
              expect(d.remaining).toBe(Math.max(0, limit - i - 1));
              expect(d.limit).toBe(limit);
            });
            expect(decisions.at(-1)?.overLimit).toBeUndefined();
            clock.advance(2 * WINDOW);
          }
        }),
        { numRuns: 15 },
      );
    },
  );

  it('the raised capacity is exact for decimal percentages (⌊250 × 1.292⌋ = 323)', async () => {
    // Binary floating point computes 250 × 129.2 / 100 as 322.99999999999994.
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 1_000_000 }),
        fc.integer({ min: 1, max: 100_000 }),
        async (limit, hundredths) => {
          const ceiling = Math.floor((limit * (10_000 + hundredths)) / 10_000);
          const throttle = { mode: 'soft', overagePercent: hundredths / 100 } as const;
          // A single request of cost = ceiling passes, and one unit more can never pass.
          const at = limiterWith({ limit, algorithm: 'fixed-window', throttle }).limiter;
          expect((await at.consume('k', { cost: ceiling })).allowed).toBe(true);
          const over = limiterWith({ limit, algorithm: 'fixed-window', throttle }).limiter;
          expect((await over.consume('k', { cost: ceiling + 1 })).reason).toBe('cost-exceeds-limit');
        },
      ),
      { numRuns: 200, examples: [[250, 2_920]] },
    );
  });

  // Regression: a result within 1e-12 of its size of a whole number was that number, and past
  // 1e11 that took whole tenths: 100,000,000,003 raised by 30 % (130,000,000,003.9) gave
  // 130,000,000,004.
  it('the raised capacity of a large limit is its floor too', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1_000_000_000, max: Math.floor(2 ** 49 / 1000) }),
        fc.integer({ min: 1, max: 100_000 }),
        async (limit, hundredths) => {
          const ceiling = Number((BigInt(limit) * BigInt(10_000 + hundredths)) / 10_000n);
          const throttle = { mode: 'soft', overagePercent: hundredths / 100 } as const;
          const at = limiterWith({ limit, window: 1000, algorithm: 'fixed-window', throttle }).limiter;
          expect((await at.consume('k', { cost: ceiling })).allowed).toBe(true);
          const over = limiterWith({ limit, window: 1000, algorithm: 'fixed-window', throttle }).limiter;
          expect((await over.consume('k', { cost: ceiling + 1 })).reason).toBe('cost-exceeds-limit');
        },
      ),
      { numRuns: 200, examples: [[100_000_000_003, 3_000]] },
    );
  });

  // Regression: once the overage was spent, a peek said `allowed: false` with
  // `overLimit: 'soft'`, a mark that means the request passed only thanks to the mode.
  it('a peek that says no more would pass carries no overage mark', async () => {
    const throttle = { mode: 'soft', overagePercent: 50 } as const;
    const { limiter } = limiterWith({ limit: 2, algorithm: 'fixed-window', throttle });
    for (let i = 0; i < 3; i++) expect((await limiter.consume('k')).allowed).toBe(true);
    const spent = await limiter.peek('k');
    expect(spent.allowed).toBe(false);
    expect(spent.overLimit).toBeUndefined();
  });

  it('raises the capacity of the buckets the same way', async () => {
    for (const algorithm of ['token-bucket', 'leaky-bucket', 'gcra'] as const) {
      const { limiter } = limiterWith({ limit: 10, algorithm, throttle: { mode: 'soft', overagePercent: 50 } });
      const admitted = (await burst(limiter)).filter((d) => d.allowed);
      expect(admitted.map((d) => d.overLimit ?? '-')).toEqual([...Array(10).fill('-'), ...Array(5).fill('soft')]);
    }
  });
});

describe('elastic throttling', () => {
  const admittedAt = async (load: number, limit: number, maxOveragePercent: number, algorithm: AlgorithmName) => {
    const throttle = { mode: 'elastic', maxOveragePercent, load: () => load } as const;
    const decisions = await burst(limiterWith({ limit, algorithm, throttle }).limiter);
    return decisions.filter((d) => d.allowed);
  };

  it.each(['fixed-window', 'sliding-window-counter', 'gcra'] as const)(
    '%s admits L at full load, the ceiling at no load, and monotonically in between',
    async (algorithm) => {
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 1, max: 50 }),
          fc.integer({ min: 1, max: 300 }),
          fc.uniqueArray(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 2, maxLength: 5 }),
          async (limit, maxOveragePercent, loads) => {
            const ceiling = Math.floor((limit * (100 + maxOveragePercent)) / 100);
            const full = await admittedAt(1, limit, maxOveragePercent, algorithm);
            expect(full).toHaveLength(limit);
            expect(full.every((d) => d.overLimit === undefined)).toBe(true);
            const idle = await admittedAt(0, limit, maxOveragePercent, algorithm);
            expect(idle).toHaveLength(ceiling);
            expect(idle.slice(limit).every((d) => d.overLimit === 'elastic')).toBe(true);
            const counts: number[] = [];
            for (const load of [...loads].sort((a, b) => a - b)) {
              const n = (await admittedAt(load, limit, maxOveragePercent, algorithm)).length;
              // Linear in the spare capacity, to within the one request lost to rounding down.
              expect(Math.abs(n - limit * (1 + ((1 - load) * maxOveragePercent) / 100))).toBeLessThan(1 + 1e-9);
              counts.push(n);
            }
            for (let i = 1; i < counts.length; i++) expect(counts[i]).toBeLessThanOrEqual(counts[i - 1] as number);
          },
        ),
        { numRuns: 25 },
      );
    },
  );

  // Regression: a cost above the capacity of the moment was told it could never pass (a 429
  // with no Retry-After), though at a lower load the same request passed.
  it('a cost within the capacity at no load can pass: it is refused with a wait, not told it never can', async () => {
    let load = 1;
    const throttle = { mode: 'elastic', maxOveragePercent: 100, load: () => load } as const;
    const { limiter } = limiterWith({ limit: 10, algorithm: 'fixed-window', throttle });
    const busy = await limiter.consume('k', { cost: 15 });
    expect(busy.allowed).toBe(false);
    expect(busy.reason).toBeUndefined();
    expect(busy.retryAfterMs).toBeLessThan(Number.POSITIVE_INFINITY);
    load = 0;
    expect(await limiter.consume('k', { cost: 15 })).toMatchObject({ allowed: true, overLimit: 'elastic' });
    expect(await limiter.consume('k', { cost: 21 })).toMatchObject({ allowed: false, reason: 'cost-exceeds-limit' });
  });

  it('treats a load outside [0, 1] as the nearest end and a non-number as saturated', async () => {
    expect(await admittedAt(-3, 10, 50, 'fixed-window')).toHaveLength(15);
    expect(await admittedAt(7, 10, 50, 'fixed-window')).toHaveLength(10);
    expect(await admittedAt(Number.NaN, 10, 50, 'fixed-window')).toHaveLength(10);
    // What a mistaken probe hands back (an async function's promise, nothing, text): each lent
    // nothing, never NaN capacities that refused every request.
    for (const reading of [Promise.resolve(0.1), undefined, '0.5', null, {}]) {
      const admitted = await admittedAt(reading as unknown as number, 10, 50, 'fixed-window');
      expect(admitted, String(reading)).toHaveLength(10);
      expect(admitted.every((d) => d.overLimit === undefined && d.remaining >= 0)).toBe(true);
    }
  });

  /** A fixed-window limiter lending by the probe `load`. */
  const probedBy = (load: () => number, limit: number, maxOveragePercent: number) =>
    limiterWith({ limit, algorithm: 'fixed-window', throttle: { mode: 'elastic', maxOveragePercent, load } }).limiter;
  const consumed = async (limiter: ReturnType<typeof createLimiter>, times: number): Promise<Decision[]> => {
    const decisions: Decision[] = [];
    for (let i = 0; i < times; i++) decisions.push(await limiter.consume('k'));
    return decisions;
  };

  it('treats a probe that throws as saturated: the decision goes on, lending nothing (it rejected, uncoded)', async () => {
    const throwing = () => {
      throw new Error('probe failed');
    };
    const limiter = probedBy(throwing, 10, 50);
    const decisions = await consumed(limiter, 12);
    expect(decisions.filter((d) => d.allowed)).toHaveLength(10);
    expect((await limiter.peek('k')).allowed).toBe(false);
  });

  it('treats an async probe that rejects as saturated, its rejection handled (it ended the process)', async () => {
    const unhandled: unknown[] = [];
    const record = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', record);
    try {
      const rejecting = (async () => {
        throw new Error('probe failed');
      }) as unknown as () => number;
      const decisions = await consumed(probedBy(rejecting, 2, 100), 4);
      expect(decisions.map((d) => d.allowed)).toEqual([true, true, false, false]);
      await new Promise((resolve) => setImmediate(resolve));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', record);
    }
  });

  it('works with the default event-loop probe, within [L, ceiling]', async () => {
    const { limiter } = limiterWith({
      limit: 10,
      algorithm: 'fixed-window',
      throttle: { mode: 'elastic', maxOveragePercent: 100 },
    });
    const admitted = (await burst(limiter)).filter((d) => d.allowed).length;
    expect(admitted).toBeGreaterThanOrEqual(10);
    expect(admitted).toBeLessThanOrEqual(20);
  });
});

describe('elastic throttling beside a queue', () => {
  const queued = (algorithm: 'gcra' | 'leaky-bucket') => ({
    name: 'queued',
    limit: 10,
    window: 1_000,
    algorithm,
    queue: { maxDelayMs: 5_000 },
  });

  it.each(['gcra', 'leaky-bucket'] as const)(
    '%s: a load that falls while requests wait releases the later ones after the earlier (first-in first-out)',
    async (algorithm) => {
      let load = 1;
      const clock = manualClock(START);
      const limiter = createLimiter({
        policies: [queued(algorithm), { name: 'daily', limit: 1_000, window: '1d' }],
        throttle: { mode: 'elastic', maxOveragePercent: 100, load: () => load },
        clock,
        store: createMemoryStore({ maxKeys: 10 }),
      });
      const releases: number[] = [];
      for (let i = 0; i < 15; i++) releases.push(clock() + (await limiter.consume('k')).delayMs);
      load = 0;
      clock.advance(50);
      const later = await limiter.consume('k');
      releases.push(clock() + later.delayMs);
      for (let i = 1; i < releases.length; i++) {
        expect(releases[i], `request ${i + 1}`).toBeGreaterThanOrEqual(releases[i - 1] as number);
      }
      // The policy that refuses is still lent its overage.
      const daily = later.policies.find((p) => p.name === 'daily');
      expect(daily?.remaining).toBe(1_000 - 16);
    },
  );

  it('fails at start-up when every policy queues: elastic mode would lend nothing', () => {
    expect(() =>
      createLimiter({
        ...queued('gcra'),
        throttle: { mode: 'elastic', maxOveragePercent: 50 },
      } as LimiterOptions),
    ).toThrow(expect.objectContaining({ code: 'ERR_SLUICE_INVALID_THROTTLE' }));
  });
});
