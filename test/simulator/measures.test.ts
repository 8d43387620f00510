import {
  type Arrival,
  admittedSeries,
  type Buckets,
  bursts,
  compareWithExactLog,
  counterErrorCountingEveryRequest,
  offeredSeries,
  releasedSeries,
  retryAfterSeries,
  type SimulatedDecision,
  simulate,
  totals,
  trailingWindowSeries,
  worstWindow,
} from '@sluice/simulator';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

const at = (times: readonly number[], key = 'a'): Arrival[] => times.map((t) => ({ at: t, key, cost: 1 }));
const range = (from: number, count: number, step = 0) => Array.from({ length: count }, (_, i) => from + i * step);

describe('counterErrorCountingEveryRequest', () => {
  it('counts a refusal the exact window would not make: a burst at the start of the previous window', () => {
    // 10 at t = 0, then one at 1001: the estimate weighs the 10 by 999/1000 and refuses;
    // the exact window (1, 1001] is empty.
    expect(counterErrorCountingEveryRequest(at([...range(0, 10), 1001]), 10, 1000)).toMatchObject({
      decisions: 11,
      wronglyAllowed: 0,
      wronglyRefused: 1,
    });
  });

  it('counts an admission over the exact limit: a burst at the end of the previous window', () => {
    // 10 at t = 999, then one at 1500: the estimate sees 10 × 0.5 = 5 and allows; the exact
    // window (500, 1500] already holds 10.
    expect(counterErrorCountingEveryRequest(at([...range(999, 10), 1500]), 10, 1000)).toMatchObject({
      wronglyAllowed: 1,
      wronglyRefused: 0,
      nearLimit: 3,
    });
  });

  it('makes no mistake on traffic far from the limit', () => {
    const traffic = bursts({
      baseRatePerSecond: 2,
      burstSize: 5,
      burstEvery: '10s',
      duration: '2m',
    });
    expect(counterErrorCountingEveryRequest(traffic, 1_000, 10_000).errorRate).toBe(0);
  });
});

describe('worstWindow and trailingWindowSeries', () => {
  it('agree on the peak, and a window (t − W, t] excludes its start', async () => {
    const traffic = bursts({
      baseRatePerSecond: 4,
      burstSize: 150,
      burstEvery: '30s',
      duration: '2m',
    });
    for (const algorithm of ['fixed-window', 'gcra', 'sliding-window-counter'] as const) {
      const { decisions } = await simulate(traffic, {
        limit: 100,
        window: '10s',
        algorithm,
      });
      const series = trailingWindowSeries(decisions, 10_000, {
        bucketMs: 1_000,
        startMs: 0,
        endMs: 120_000,
      });
      expect(Math.max(...(series.values as number[]))).toBe(worstWindow(decisions, 100, 10_000).admitted);
    }
    const edge = await simulate(at([0, 1000, 1000]), {
      limit: 10,
      window: 1000,
    });
    expect(worstWindow(edge.decisions, 10, 1000).admitted).toBe(2);
  });

  it('counts a queued request when it is passed on, not when it arrived', async () => {
    // 20 at once into gcra 10 per second, burst 1, queue up to 5 s: they leave 100 ms apart.
    const { decisions } = await simulate(at(range(0, 20)), {
      limit: 10,
      window: '1s',
      algorithm: 'gcra',
      burst: 1,
      queue: { maxDelayMs: '5s' },
    });
    expect(decisions.every((d) => d.allowed)).toBe(true);
    expect(worstWindow(decisions, 10, 1000)).toMatchObject({
      admitted: 10,
      excess: 0,
    });
    expect(compareWithExactLog(decisions, 10, 1000).wronglyAllowed).toBe(10);
  });
});

describe('trailingWindowSeries, bucket by bucket', () => {
  /** Admitted decisions at `times`, as a queue-less limiter reports them. */
  const admitted = (times: readonly number[]) =>
    at(times).map((arrival) => ({ ...arrival, allowed: true, retryAfterMs: 0, delayMs: 0 }));
  /** Counted directly: the most admitted in a window (t − W, t] for every ms t of each bucket. */
  const bruteForce = (times: readonly number[], windowMs: number, bucketMs: number, buckets: number, startMs = 0) =>
    Array.from({ length: buckets }, (_, i) => {
      let most = 0;
      for (let t = startMs + i * bucketMs; t < startMs + (i + 1) * bucketMs; t++)
        most = Math.max(most, times.filter((r) => r > t - windowMs && r <= t).length);
      return most;
    });

  it('counts the window still open at a bucket’s start (a bucket with no arrival of its own read 0)', () => {
    // Requests at 500 ms stay in a 1 s window until 1499 ms: the second bucket opens with all three.
    const times = [500, 500, 500];
    const series = trailingWindowSeries(admitted(times), 1_000, { bucketMs: 1_000, startMs: 0, endMs: 3_000 });
    expect(series.values).toEqual(bruteForce(times, 1_000, 1_000, 3));
    expect(series.values[1]).toBe(3);
  });

  it('gives each bucket the most its windows held, as counted ms by ms, requests before the start included', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 2_999 }), { maxLength: 30 }),
        fc.integer({ min: 1, max: 1_500 }),
        fc.integer({ min: 1, max: 1_000 }),
        fc.integer({ min: 0, max: 1_500 }),
        (unsorted, windowMs, bucketMs, startMs) => {
          const times = [...unsorted].sort((a, b) => a - b);
          const buckets = Math.ceil((3_000 - startMs) / bucketMs);
          const series = trailingWindowSeries(admitted(times), windowMs, { bucketMs, startMs, endMs: 3_000 });
          expect(series.values).toEqual(bruteForce(times, windowMs, bucketMs, buckets, startMs));
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('measure options', () => {
  const invalid = [Number.NaN, 0, -1, 1.5, '60000' as unknown as number];

  it.each(invalid)(
    'refuse the limit %s with ERR_SLUICE_INVALID_LIMIT (NaN gave NaN, 0 an Infinity ratio)',
    async (limit) => {
      const { decisions } = await simulate(at([0, 1]), { limit: 1, window: 1000 });
      const expected = expect.objectContaining({
        code: 'ERR_SLUICE_INVALID_LIMIT',
        message: expect.stringContaining('`limit`'),
      });
      expect(() => worstWindow(decisions, limit, 1000)).toThrow(expected);
      expect(() => compareWithExactLog(decisions, limit, 1000)).toThrow(expected);
      expect(() => counterErrorCountingEveryRequest(at([0, 1]), limit, 1000)).toThrow(expected);
    },
  );

  it.each(invalid)(
    'refuse the window %s ms with ERR_SLUICE_INVALID_DURATION (0 gave a worst window of 0)',
    async (windowMs) => {
      const { decisions } = await simulate(at([0, 1]), { limit: 1, window: 1000 });
      const expected = expect.objectContaining({
        code: 'ERR_SLUICE_INVALID_DURATION',
        message: expect.stringContaining('`windowMs`'),
      });
      expect(() => worstWindow(decisions, 1, windowMs)).toThrow(expected);
      expect(() => compareWithExactLog(decisions, 1, windowMs)).toThrow(expected);
      expect(() => counterErrorCountingEveryRequest(at([0, 1]), 1, windowMs)).toThrow(expected);
      expect(() => trailingWindowSeries(decisions, windowMs, { bucketMs: 1 })).toThrow(expected);
    },
  );

  it.each(invalid)(
    'refuse a bucketMs of %s with ERR_SLUICE_INVALID_DURATION (0 threw an uncoded RangeError)',
    async (bucketMs) => {
      const { decisions } = await simulate(at([0, 1]), { limit: 1, window: 1000 });
      const expected = expect.objectContaining({
        code: 'ERR_SLUICE_INVALID_DURATION',
        message: expect.stringContaining('`bucketMs`'),
      });
      expect(() => admittedSeries(decisions, { bucketMs })).toThrow(expected);
      expect(() => trailingWindowSeries(decisions, 1000, { bucketMs })).toThrow(expected);
    },
  );

  it('refuse a bucketMs that makes more than a million buckets, rather than run out of memory', () => {
    const traffic = at([0, 2_000_000]);
    expect(() => offeredSeries(traffic, { bucketMs: 1 })).toThrow(
      expect.objectContaining({
        code: 'ERR_SLUICE_INVALID_DURATION',
        message: expect.stringContaining('at least 3 ms'),
      }),
    );
    expect(offeredSeries(traffic, { bucketMs: 3 }).values).toHaveLength(666_667);
  });

  it('refuse buckets that end before they start (they gave one bucket of nothing)', () => {
    const traffic = at([0, 5_000]);
    const backwards = expect.objectContaining({
      code: 'ERR_SLUICE_INVALID_OPTION',
      message: expect.stringContaining('`endMs`'),
    });
    expect(() => offeredSeries(traffic, { bucketMs: 1_000, startMs: 4_000, endMs: 2_000 })).toThrow(backwards);
    // Left out, the end is just after the last request: a start past it is refused alike.
    expect(() => offeredSeries(traffic, { bucketMs: 1_000, startMs: 9_000 })).toThrow(backwards);
    expect(offeredSeries(traffic, { bucketMs: 1_000, startMs: 5_000 }).values).toEqual([1]);
  });
});

describe('series buckets', () => {
  const traffic = at([1_000, 5_000]);

  // Regression: a start before 1970 drew buckets no arrival can fall in.
  it.each([
    ['startMs', -20_000],
    ['endMs', 2 ** 50 + 2],
  ])('refuse %s %d, outside the times an arrival may have', (option, value) => {
    expect(() => offeredSeries(traffic, { bucketMs: 1_000, [option]: value })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_OPTION', message: expect.stringContaining(`\`${option}\``) }),
    );
  });

  it('end just after an arrival at the latest time a limiter takes', () => {
    expect(offeredSeries(at([2 ** 50]), { bucketMs: 1_000 }).values).toEqual([1]);
  });

  it.each(['startMs', 'endMs'])('refuse %s: null, as any other bad time (it was read as the default)', (option) => {
    expect(() => offeredSeries(traffic, { bucketMs: 1_000, [option]: null as never })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_OPTION', message: expect.stringContaining(`\`${option}\``) }),
    );
  });

  it('refuse a name they do not know (a misspelt `start` was dropped and the default used)', async () => {
    const { decisions } = await simulate(traffic, { limit: 1, window: 1_000 });
    const misspelt = { bucketMs: 1_000, start: 0 } as Buckets;
    const unknown = expect.objectContaining({
      code: 'ERR_SLUICE_INVALID_OPTION',
      message: expect.stringContaining('Unknown buckets option `start` (did you mean `startMs`?)'),
    });
    expect(() => offeredSeries(traffic, misspelt)).toThrow(unknown);
    expect(() => admittedSeries(decisions, misspelt)).toThrow(unknown);
    expect(() => trailingWindowSeries(decisions, 1_000, misspelt)).toThrow(unknown);
    expect(offeredSeries(traffic, { bucketMs: 1_000, startMs: 0 }).values).toEqual([0, 1, 0, 0, 0, 1]);
  });
});

describe('the measures that add decisions up', () => {
  const decided = (times: readonly number[]): SimulatedDecision[] =>
    at(times).map((arrival) => ({ ...arrival, allowed: true, retryAfterMs: 0, delayMs: 0 }));
  const measures = {
    worstWindow: (d: SimulatedDecision[]) => worstWindow(d, 1, 10_000),
    totals,
    offeredSeries: (d: SimulatedDecision[]) => offeredSeries(d, { bucketMs: 1_000 }),
    admittedSeries: (d: SimulatedDecision[]) => admittedSeries(d, { bucketMs: 1_000 }),
    retryAfterSeries: (d: SimulatedDecision[]) => retryAfterSeries(d, { bucketMs: 1_000 }),
    trailingWindowSeries: (d: SimulatedDecision[]) => trailingWindowSeries(d, 10_000, { bucketMs: 1_000 }),
  };
  const [ok] = decided([1_000]) as [SimulatedDecision];
  const malformed: [string, unknown, string][] = [
    [
      'an `at` as text',
      { ...ok, at: '2000' },
      'Traffic entry 1: `at` must be whole epoch ms from 0 to 2^50; received "2000"',
    ],
    ['a `cost` as text', { ...ok, cost: '5' }, 'Traffic entry 1: `cost` must be a positive whole number; received "5"'],
    ['a negative `cost`', { ...ok, cost: -3 }, 'Traffic entry 1: `cost` must be a positive whole number; received -3'],
    ['null', null, 'Traffic entry 1 must be { at, key, cost }'],
  ];

  describe.each(Object.entries(measures))('%s', (_, measure) => {
    it.each(malformed)(
      'refuses an entry with %s, naming it (it returned "15-3", "05" or -3, or threw a TypeError)',
      (_, entry, message) => {
        expect(() => measure([ok, entry as SimulatedDecision])).toThrow(
          expect.objectContaining({ code: 'ERR_SLUICE_INVALID_TRAFFIC', message: expect.stringContaining(message) }),
        );
      },
    );

    it('refuses something other than an array with a coded error', () => {
      expect(() => measure(null as never)).toThrow(expect.objectContaining({ code: 'ERR_SLUICE_INVALID_TRAFFIC' }));
    });

    it('takes decisions in any order, as two runs joined end to end', () => {
      expect(() => measure([...decided([1_000, 2_000]), ...decided([0, 1_500])])).not.toThrow();
    });
  });

  // Decisions from a log of one's own, with a field left out or read from CSV as text, were
  // counted wrong without a word: a missing delayMs made worstWindow 300 admitted of a limit
  // of 10, an allowed of 'false' counted as admitted.
  const badDecisions: [string, unknown, string][] = [
    ['`allowed` as text', { ...ok, allowed: 'false' }, '`allowed` must be true or false; received "false"'],
    ['no `delayMs`', { ...ok, delayMs: undefined }, '`delayMs` must be a whole number of ms of 0 or more'],
    ['a `delayMs` as text', { ...ok, delayMs: '0' }, '`delayMs` must be a whole number of ms of 0 or more'],
    ['a negative `delayMs`', { ...ok, delayMs: -100 }, '`delayMs` must be a whole number of ms of 0 or more'],
    ['a fraction of a `delayMs`', { ...ok, delayMs: 0.5 }, '`delayMs` must be a whole number of ms of 0 or more'],
    ['an endless `delayMs`', { ...ok, delayMs: Number.POSITIVE_INFINITY }, '`delayMs` must be a whole number'],
    ['a fraction of a `retryAfterMs`', { ...ok, retryAfterMs: 1.5 }, '`retryAfterMs` must be a whole number of ms'],
    ['no `allowed`', { ...ok, allowed: undefined }, '`allowed` must be true or false; received undefined'],
    ['a `retryAfterMs` as text', { ...ok, retryAfterMs: '3000' }, '`retryAfterMs` must be a whole number of ms'],
    ['a negative `retryAfterMs`', { ...ok, retryAfterMs: -5 }, '`retryAfterMs` must be a whole number of ms'],
    ['an unknown `overLimit`', { ...ok, overLimit: 'hard' }, "`overLimit` must be 'soft', 'elastic', 'shadow'"],
  ];
  const decisionMeasures = {
    ...measures,
    releasedSeries: (d: SimulatedDecision[]) => releasedSeries(d, { bucketMs: 1_000 }),
    compareWithExactLog: (d: SimulatedDecision[]) => compareWithExactLog(d, 1, 10_000),
  };
  const { offeredSeries: _offered, ...readingDecisions } = decisionMeasures;
  describe.each(Object.entries(readingDecisions))('%s', (_, measure) => {
    it.each(badDecisions)('refuses a decision with %s, naming it', (_, entry, message) => {
      expect(() => measure([ok, entry as SimulatedDecision])).toThrow(
        expect.objectContaining({
          code: 'ERR_SLUICE_INVALID_TRAFFIC',
          message: expect.stringContaining(`Traffic entry 1: ${message}`),
        }),
      );
    });

    it('takes a cost that never passes (retryAfterMs: Infinity)', () => {
      const never = { ...ok, at: 2_000, allowed: false, retryAfterMs: Number.POSITIVE_INFINITY };
      expect(() => measure([ok, never])).not.toThrow();
    });
  });

  it('offeredSeries reads arrivals alone, decided or not', () => {
    expect(() => offeredSeries(at([1_000]), { bucketMs: 1_000 })).not.toThrow();
  });
});

describe('series over their default buckets', () => {
  it('count queued requests released after the last arrival (releasedSeries dropped them)', async () => {
    // Four at once, one a second: released at 0, 1, 2 and 3 s, after the last arrival at 0.
    const { decisions } = await simulate(at([0, 0, 0, 0]), {
      limit: 1,
      window: '1s',
      algorithm: 'gcra',
      burst: 1,
      queue: { maxDelayMs: 5_000 },
    });
    expect(decisions.map((d) => d.delayMs)).toEqual([0, 1_000, 2_000, 3_000]);
    expect(releasedSeries(decisions, { bucketMs: 1_000 }).values).toEqual([1, 1, 1, 1]);
    // The trailing window's peak is the worst window's, as with buckets given explicitly.
    const trailing = trailingWindowSeries(decisions, 10_000, { bucketMs: 1_000 });
    expect(Math.max(...(trailing.values as number[]))).toBe(worstWindow(decisions, 1, 10_000).admitted);
    expect(worstWindow(decisions, 1, 10_000).admitted).toBe(4);
  });
});

describe('worstWindow over releases out of arrival order', () => {
  it('counts each request when it is released (unsorted, it reported 24 where at most 14 passed in one window)', () => {
    // A client's queue reset while it held ten requests for 2 s: the fourteen after them pass
    // at once, long before the ten are released.
    const decided = (times: number[], delayMs: number) =>
      at(times).map((arrival) => ({ ...arrival, allowed: true, retryAfterMs: 0, delayMs }));
    const decisions = [...decided(range(0, 10, 10), 2_000), ...decided(range(100, 14, 10), 0)];
    const released = decisions.map((d) => d.at + d.delayMs);
    // Counted directly: the most releases in any window (t − 1 s, t].
    const most = Math.max(...released.map((t) => released.filter((r) => r > t - 1_000 && r <= t).length));
    expect(most).toBe(14);
    expect(worstWindow(decisions, 10, 1_000).admitted).toBe(most);
    const trailing = trailingWindowSeries(decisions, 1_000, { bucketMs: 100 });
    expect(Math.max(...(trailing.values as number[]))).toBe(most);
  });
});

describe('the measures that replay a history', () => {
  it('refuse traffic out of time order or with a bad cost instead of scoring it (they returned figures)', async () => {
    // Two clients' traffic joined end to end, not merged: the second starts back at 0.
    const joined = [...at(range(0, 20, 100), 'a'), ...at(range(0, 20, 100), 'b')];
    const outOfOrder = expect.objectContaining({
      code: 'ERR_SLUICE_INVALID_TRAFFIC',
      message: expect.stringContaining('Traffic entry 20 is out of time order'),
    });
    expect(() => counterErrorCountingEveryRequest(joined, 10, 1_000)).toThrow(outOfOrder);
    const a = await simulate(at(range(0, 20, 100), 'a'), { limit: 10, window: '1s' });
    const b = await simulate(at(range(0, 20, 100), 'b'), { limit: 10, window: '1s' });
    expect(() => compareWithExactLog([...a.decisions, ...b.decisions], 10, 1_000)).toThrow(outOfOrder);
    const badCost = [{ at: 0, key: 'a', cost: -5 }];
    expect(() => counterErrorCountingEveryRequest(badCost, 10, 1_000)).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_TRAFFIC', message: expect.stringContaining('received -5') }),
    );
    expect(() => counterErrorCountingEveryRequest('a.log' as unknown as Arrival[], 10, 1_000)).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_TRAFFIC' }),
    );
  });
});
