import {
  type Arrival,
  boundaryAttack,
  bursts,
  diurnal,
  type FlashCrowd,
  heavyTailed,
  MAX_ARRIVALS,
  MAX_CLIENTS,
  simulate,
  steady,
} from '@sluice/simulator';
import { describe, expect, it } from 'vitest';
import { poissonTimes, seededRandom } from '../../packages/simulator/src/traffic/random.js';

const inOrder = (traffic: readonly Arrival[]) =>
  traffic.every((a, i) => i === 0 || a.at >= (traffic[i - 1] as Arrival).at);
const perKey = (traffic: readonly Arrival[]) => {
  const counts = new Map<string, number>();
  for (const a of traffic) counts.set(a.key, (counts.get(a.key) ?? 0) + 1);
  return [...counts.values()].sort((a, b) => b - a);
};

const generators = {
  steady: (seed: number) => steady({ ratePerSecond: 40, duration: '1m', seed }),
  bursts: (seed: number) => bursts({ baseRatePerSecond: 5, burstSize: 50, burstEvery: '10s', duration: '1m', seed }),
  heavyTailed: (seed: number) => heavyTailed({ clients: 500, ratePerSecond: 50, duration: '2m', seed }),
  diurnal: (seed: number) =>
    diurnal({
      clients: 200,
      meanRatePerSecond: 0.5,
      flashCrowd: { at: '11h', duration: '30m', extraRatePerSecond: 2, clients: 50 },
      seed,
    }),
};

describe('traffic generators', () => {
  it.each(Object.entries(generators))(
    '%s: the same seed gives the same traffic, another seed other traffic',
    (_, make) => {
      const first = make(7);
      expect(first.length).toBeGreaterThan(100);
      expect(make(7)).toEqual(first);
      expect(make(8)).not.toEqual(first);
      expect(inOrder(first)).toBe(true);
      expect(first.every((a) => Number.isSafeInteger(a.at) && a.cost === 1)).toBe(true);
    },
  );

  it('steady: the rate asked for, within the duration', () => {
    const traffic = steady({ ratePerSecond: 40, duration: '1m', startMs: 5_000 });
    expect(traffic).toHaveLength(2_400);
    expect(traffic[0]?.at).toBeGreaterThanOrEqual(5_000);
    expect(traffic.at(-1)?.at).toBeLessThan(65_000);
  });

  it('steady: every request within [startMs, startMs + duration), whatever the seed (the last one jittered past the end)', () => {
    // A last gap cut short by the end: its request was moved up to half a gap past it.
    for (let seed = 0; seed < 50; seed++) {
      const traffic = steady({ ratePerSecond: 1, duration: 1_600, startMs: 10_000, seed });
      expect(traffic).toHaveLength(2);
      for (const { at } of traffic) {
        expect(at).toBeGreaterThanOrEqual(10_000);
        expect(at, `seed ${seed}`).toBeLessThan(11_600);
      }
    }
  });

  // Summed onto an epoch start (some 1.7e12), each gap lost its last bits to rounding: at 1M
  // requests a second steady made 1,024,000 a second, at 10M/s it never stopped, and
  // heavyTailed made 6 % too many at 5M/s.
  it('steady and heavyTailed: the rate asked for at an epoch start, however high', () => {
    const startMs = 1_700_000_000_000;
    const fast = steady({ ratePerSecond: 1_000_000, duration: 1_000, startMs });
    expect(fast).toHaveLength(1_000_000);
    expect(fast[0]?.at).toBeGreaterThanOrEqual(startMs);
    expect(fast.at(-1)?.at).toBeLessThan(startMs + 1_000);
    expect(inOrder(fast)).toBe(true);
    expect(steady({ ratePerSecond: 10_000_000, duration: 100, startMs })).toHaveLength(1_000_000);
    // Poisson: 500,000 expected, a standard deviation of 707.
    const drawn = heavyTailed({ clients: 100, ratePerSecond: 5_000_000, duration: 100, startMs });
    expect(Math.abs(drawn.length - 500_000)).toBeLessThan(5_000);
    expect(drawn.at(-1)?.at).toBeLessThan(startMs + 100);
  });

  it('refuses a span that ends past 2^50 ms, the latest time a limiter takes', () => {
    expect(() => steady({ ratePerSecond: 1, duration: 1_000, startMs: 2 ** 50 })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_TRAFFIC', message: expect.stringContaining('2^50') }),
    );
  });

  it('bursts: each burst adds its size on top of the base rate', () => {
    const traffic = bursts({ baseRatePerSecond: 5, burstSize: 50, burstEvery: '10s', duration: '1m' });
    // Bursts start at 10, 20, … 50 s: five of them.
    expect(traffic).toHaveLength(5 * 60 + 5 * 50);
    expect(traffic.filter((a) => a.at >= 10_000 && a.at < 11_000).length).toBeGreaterThanOrEqual(50);
  });

  it('heavy-tailed: the busiest client sends far more than the median one', () => {
    const counts = perKey(generators.heavyTailed(1));
    expect(counts[0]).toBeGreaterThan(20 * (counts[Math.floor(counts.length / 2)] as number));
  });

  it('diurnal: busier at the afternoon peak than at night, and the flash crowd shows', () => {
    const traffic = generators.diurnal(1);
    const hour = (h: number) => traffic.filter((a) => a.at >= h * 3_600_000 && a.at < (h + 1) * 3_600_000).length;
    expect(hour(15)).toBeGreaterThan(4 * hour(3));
    expect(traffic.some((a) => a.key.startsWith('crowd-') && a.at >= 11 * 3_600_000)).toBe(true);
    expect(traffic.some((a) => a.key.startsWith('crowd-') && (a.at < 11 * 3_600_000 || a.at >= 11.5 * 3_600_000))).toBe(
      false,
    );
  });

  it('boundary attack: limit requests on each side of a window boundary', () => {
    const traffic = boundaryAttack({ limit: 10, window: '1s', attacks: 2 });
    expect(traffic).toHaveLength(40);
    expect(traffic.filter((a) => a.at >= 950 && a.at < 1_000)).toHaveLength(10);
    expect(traffic.filter((a) => a.at >= 1_000 && a.at < 1_050)).toHaveLength(10);
    expect(traffic.filter((a) => a.at >= 2_950 && a.at < 3_050)).toHaveLength(20);
  });

  it('seeds mix into the whole generator state: the first Poisson gap is one mean gap, not ~18', () => {
    // pure-rand's xoroshiro128plus(seed) made the first draw ≈ 0.99999998 for every small seed.
    const seeds = Array.from({ length: 500 }, (_, seed) => seed);
    const first = seeds.map((seed) => heavyTailed({ clients: 1, ratePerSecond: 1, duration: '1h', seed })[0]?.at);
    const mean = first.reduce((sum: number, at) => sum + (at as number), 0) / seeds.length;
    expect(mean).toBeGreaterThan(800);
    expect(mean).toBeLessThan(1_200);
    const tenSeconds = seeds
      .slice(1, 201)
      .map((seed) => heavyTailed({ clients: 10, ratePerSecond: 1, duration: '10s', seed }));
    expect(tenSeconds.filter((traffic) => traffic.length === 0).length).toBeLessThan(5);
  });

  it('seeds differing only above the low 32 bits give different traffic, the same seed the same', () => {
    const seeds = [0, 1, 2 ** 32, 2 ** 40, Number.MAX_SAFE_INTEGER];
    const traffic = seeds.map((seed) => steady({ ratePerSecond: 5, duration: '10s', seed }));
    expect(new Set(traffic.map((t) => JSON.stringify(t))).size).toBe(seeds.length);
    expect(steady({ ratePerSecond: 5, duration: '10s', seed: 2 ** 40 })).toEqual(traffic[3]);
  });

  it.each([-1, 1.5, Number.MAX_SAFE_INTEGER + 1, Number.NaN])(
    'refuses the seed %s, outside 0 to MAX_SAFE_INTEGER',
    (seed) => {
      expect(() => steady({ ratePerSecond: 1, duration: '1s', seed })).toThrow(
        expect.objectContaining({ code: 'ERR_SLUICE_INVALID_TRAFFIC', message: expect.stringContaining('`seed`') }),
      );
    },
  );

  it('boundary attack: a spread wider than the window is refused, not turned into negative, out-of-order times', () => {
    expect(() => boundaryAttack({ limit: 3, window: '1s', attacks: 2, spread: '5s' })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_TRAFFIC', message: expect.stringContaining('`spread`') }),
    );
    const widest = boundaryAttack({ limit: 3, window: '1s', attacks: 2, spread: '1s' });
    expect(widest[0]?.at).toBe(0);
    expect(inOrder(widest)).toBe(true);
  });

  it('boundary attack: no request comes before startMs', () => {
    // The first boundary after 950 ms is 1000 ms, too close for a 100 ms half before it.
    const traffic = boundaryAttack({ limit: 10, window: '1s', attacks: 1, spread: 100, startMs: 950 });
    expect(traffic[0]?.at).toBe(1_900);
  });

  it('generators without options, and diurnal with a null flash crowd, throw coded errors rather than TypeErrors', () => {
    const missing = [steady, bursts, heavyTailed, diurnal, boundaryAttack] as ((options?: unknown) => unknown)[];
    for (const generator of missing) {
      expect(() => generator()).toThrow(expect.objectContaining({ code: 'ERR_SLUICE_INVALID_TRAFFIC' }));
    }
    const flashCrowd = null as unknown as FlashCrowd;
    expect(() => diurnal({ clients: 1, meanRatePerSecond: 1, flashCrowd })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_TRAFFIC', message: expect.stringContaining('flashCrowd') }),
    );
  });

  // Accepted, they made none of the traffic asked for: 14 requests and no crowd, 5 and no burst.
  it('refuses a flash crowd after the traffic ends, and bursts that never come or overlap', () => {
    const crowd = { at: '2h', duration: '1m', extraRatePerSecond: 100, clients: 10 } as const;
    expect(() => diurnal({ clients: 5, meanRatePerSecond: 0.01, duration: '1h', flashCrowd: crowd })).toThrow(
      expect.objectContaining({
        code: 'ERR_SLUICE_INVALID_TRAFFIC',
        message: expect.stringContaining('flashCrowd.at'),
      }),
    );
    const burst = { baseRatePerSecond: 1, burstSize: 10, duration: '5s' } as const;
    expect(() => bursts({ ...burst, burstEvery: '1h' })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_TRAFFIC', message: expect.stringContaining('burstEvery') }),
    );
    expect(() => bursts({ ...burst, burstEvery: '1s', burstLength: '2s' })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_TRAFFIC', message: expect.stringContaining('burstLength') }),
    );
    expect(bursts({ ...burst, burstEvery: '2s', burstLength: '2s' }).length).toBeGreaterThan(10);
    // At the traffic's very end, nothing of either would come.
    expect(() => bursts({ ...burst, burstEvery: '5s' })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_TRAFFIC' }),
    );
    const atEnd = { ...crowd, at: '1h' } as const;
    expect(() => diurnal({ clients: 5, meanRatePerSecond: 0.01, duration: '1h', flashCrowd: atEnd })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_TRAFFIC' }),
    );
  });

  it('diurnal: a peak or a flash crowd at the very start is taken (0 was refused as a duration)', () => {
    const day = { clients: 50, meanRatePerSecond: 0.05, duration: '1d' } as const;
    // The cycle repeats daily: a peak at the start is the peak a day after it.
    expect(diurnal({ ...day, peakAt: 0 })).toEqual(diurnal({ ...day, peakAt: '24h' }));
    expect(diurnal({ ...day, peakAt: '0h' })).toEqual(diurnal({ ...day, peakAt: '24h' }));
    const flashCrowd = { at: 0, duration: '1m', extraRatePerSecond: 5, clients: 10 } as const;
    const crowd = diurnal({ ...day, flashCrowd }).filter((a) => a.key.startsWith('crowd-'));
    expect(crowd.length).toBeGreaterThan(200);
    expect(crowd.every((a) => a.at < 60_000)).toBe(true);
    expect(() => diurnal({ ...day, peakAt: -1 })).toThrow(
      expect.objectContaining({
        code: 'ERR_SLUICE_INVALID_DURATION',
        message: expect.stringContaining('0 for the start'),
      }),
    );
  });

  it('refuses bad options with a coded error naming the option', () => {
    expect(() => steady({ ratePerSecond: 0, duration: '1m' })).toThrow(
      expect.objectContaining({
        code: 'ERR_SLUICE_INVALID_TRAFFIC',
        message: expect.stringContaining('ratePerSecond'),
      }),
    );
    expect(() => heavyTailed({ clients: 1.5, ratePerSecond: 1, duration: '1m' })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_TRAFFIC', message: expect.stringContaining('clients') }),
    );
    expect(() => steady({ ratePerSecond: 1, duration: '1 minute' as '1m' })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_DURATION' }),
    );
    expect(() => diurnal({ clients: 1, meanRatePerSecond: 1, swing: 2 })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_TRAFFIC', message: expect.stringContaining('swing') }),
    );
    // Text that reads as a number was shown as that number, hiding why it was refused.
    expect(() => boundaryAttack({ limit: '100' as never, window: '1m' })).toThrow(/received "100"\./);
    expect(() => heavyTailed({ clients: 5, ratePerSecond: [7] as never, duration: '1m' })).toThrow(/received an array/);
  });

  it('refuses an option it does not know, and a key that is not text (they were dropped or coerced)', () => {
    const refused = (text: string) =>
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_TRAFFIC', message: expect.stringContaining(text) });
    expect(() => steady({ ratePerSec: 5, duration: '1m' } as never)).toThrow(refused('ratePerSec'));
    expect(() =>
      bursts({ baseRatePerSecond: 1, burstSize: 5, burstEvery: '10s', duration: '1m', burst: 9 } as never),
    ).toThrow(refused('burst'));
    expect(() =>
      diurnal({
        clients: 1,
        meanRatePerSecond: 1,
        flashCrowd: { at: '1h', duration: '1m', extraRatePerSecond: 1, clients: 1, size: 5 } as FlashCrowd,
      }),
    ).toThrow(refused('Unknown flashCrowd option `size`'));
    for (const key of [7, '', { id: 'a' }]) {
      expect(() => steady({ ratePerSecond: 1, duration: '1m', key } as never)).toThrow(refused('key'));
      expect(() => boundaryAttack({ limit: 2, window: '1s', key } as never)).toThrow(refused('key'));
    }
    expect(() => heavyTailed({ clients: 2, ratePerSecond: 1, duration: '1m', keyPrefix: 0 } as never)).toThrow(
      refused('keyPrefix'),
    );
    // An empty prefix is a prefix: the keys are the ranks.
    expect(heavyTailed({ clients: 2, ratePerSecond: 5, duration: '10s', keyPrefix: '' })[0]?.key).toMatch(/^\d+$/);
  });

  it('refuses, before making any, traffic of more than MAX_ARRIVALS requests (it ran out of memory)', () => {
    const tooMany = expect.objectContaining({
      code: 'ERR_SLUICE_INVALID_TRAFFIC',
      message: expect.stringContaining(String(MAX_ARRIVALS)),
    });
    expect(() => steady({ ratePerSecond: 1_000_000, duration: '1d' })).toThrow(tooMany);
    expect(() => heavyTailed({ clients: 10, ratePerSecond: 1_000_000, duration: '1d' })).toThrow(tooMany);
    expect(() => diurnal({ clients: 10, meanRatePerSecond: 1_000_000 })).toThrow(tooMany);
    expect(() =>
      diurnal({
        clients: 10,
        meanRatePerSecond: 1,
        flashCrowd: { at: '1h', duration: '2h', extraRatePerSecond: 1_000_000, clients: 1 },
      }),
    ).toThrow(tooMany);
    expect(() => bursts({ baseRatePerSecond: 1, burstSize: 1_000_000, burstEvery: '1s', duration: '1h' })).toThrow(
      tooMany,
    );
    expect(() => boundaryAttack({ limit: 1_000_000_000, window: '1h' })).toThrow(tooMany);
    // Traffic within the bound is made.
    expect(steady({ ratePerSecond: 1000, duration: '10m' })).toHaveLength(600_000);
  });

  it('refuses a diurnal day and flash crowd that pass MAX_ARRIVALS together (each was checked alone: 10 million in one call)', () => {
    // 30/s over a day is 2.6 million requests: the day and the crowd are each under the cap.
    const crowd: FlashCrowd = { at: 0, duration: '1d', extraRatePerSecond: 30, clients: 1 };
    expect(() => diurnal({ clients: 1, meanRatePerSecond: 30, swing: 0, flashCrowd: crowd })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_TRAFFIC', message: expect.stringContaining('5000000') }),
    );
  });

  it('refuses random traffic expected to make MAX_ARRIVALS requests (about half the seeds made more)', () => {
    expect(() => heavyTailed({ clients: 1, ratePerSecond: 5_000, duration: '1000s' })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_TRAFFIC', message: expect.stringContaining('5000000') }),
    );
    expect(() => diurnal({ clients: 1, meanRatePerSecond: 5_000_000 / 86_400, swing: 0 })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_TRAFFIC' }),
    );
  });

  it('stops random arrivals that come out past their cap with a coded error, rather than exceed it', () => {
    // 1 a ms for 1000 ms: about 1000 arrivals, never 10.
    expect(() => poissonTimes(seededRandom(1), 1, 0, 1000, 10)).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_TRAFFIC', message: expect.stringContaining('seed') }),
    );
    expect(poissonTimes(seededRandom(1), 1, 0, 1000, 2000).length).toBeGreaterThan(900);
  });

  it('refuses more clients than MAX_CLIENTS with a coded error (a table per client ran out of memory)', () => {
    const tooMany = expect.objectContaining({
      code: 'ERR_SLUICE_INVALID_TRAFFIC',
      message: expect.stringContaining(String(MAX_CLIENTS)),
    });
    for (const clients of [MAX_CLIENTS + 1, 2 ** 40, Number.MAX_SAFE_INTEGER]) {
      expect(() => heavyTailed({ clients, ratePerSecond: 1, duration: '1s' })).toThrow(tooMany);
      expect(() => diurnal({ clients, meanRatePerSecond: 1, duration: '1s' })).toThrow(tooMany);
    }
    // The bound itself is taken.
    expect(heavyTailed({ clients: MAX_CLIENTS, ratePerSecond: 10, duration: '1s' }).length).toBeGreaterThan(0);
  });
});

// `undefined` alone means the default: a `null` was read as 0 and 1.
describe('a null startMs or seed', () => {
  it.each([{ startMs: null }, { seed: null }])('%o is refused, not read as the default', (given) => {
    expect(() => steady({ ratePerSecond: 5, duration: '10s', ...(given as object) })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_TRAFFIC' }),
    );
  });
});

describe('a null option with a default', () => {
  const attack = { limit: 2, window: '1s' } as const;
  const burst = { baseRatePerSecond: 1, burstSize: 2, burstEvery: '1s', duration: '3s' } as const;
  const tail = { clients: 2, ratePerSecond: 1, duration: '1s' } as const;
  const day = { clients: 2, meanRatePerSecond: 0.01, duration: '1h' } as const;
  it.each([
    ['boundaryAttack', 'startMs', () => boundaryAttack({ ...attack, startMs: null as never }), 'TRAFFIC'],
    ['boundaryAttack', 'attacks', () => boundaryAttack({ ...attack, attacks: null as never }), 'TRAFFIC'],
    ['bursts', 'burstLength', () => bursts({ ...burst, burstLength: null as never }), 'DURATION'],
    ['heavyTailed', 'exponent', () => heavyTailed({ ...tail, exponent: null as never }), 'TRAFFIC'],
    ['diurnal', 'duration', () => diurnal({ ...day, duration: null as never }), 'DURATION'],
    ['diurnal', 'swing', () => diurnal({ ...day, swing: null as never }), 'TRAFFIC'],
    ['diurnal', 'peakAt', () => diurnal({ ...day, peakAt: null as never }), 'DURATION'],
    ['diurnal', 'exponent', () => diurnal({ ...day, exponent: null as never }), 'TRAFFIC'],
  ])('%s refuses %s: null, as it refuses any other bad value (it was read as the default)', (_, option, make, code) => {
    expect(make).toThrow(
      expect.objectContaining({
        code: `ERR_SLUICE_INVALID_${code}`,
        message: expect.stringContaining(`\`${option}\``),
      }),
    );
  });
});

describe('boundaryAttack near 2^50 ms', () => {
  it('refuses options whose attacks end past 2^50 ms (it made traffic that simulate then refused)', async () => {
    const pastTheEnd = expect.objectContaining({
      code: 'ERR_SLUICE_INVALID_TRAFFIC',
      message: expect.stringContaining('2^50'),
    });
    expect(() => boundaryAttack({ limit: 100, window: '1h', startMs: 2 ** 50 - 1_000 })).toThrow(pastTheEnd);
    // Each attack comes a spread after the one before ends, two windows on, and lasts two spreads.
    const options = { limit: 128, window: 2 ** 20, spread: 2 ** 20, attacks: 2 };
    const latest = boundaryAttack({ ...options, startMs: 2 ** 50 - 2 ** 22 });
    expect(latest.at(-1)?.at).toBe(2 ** 50 - 2 ** 20 / 128);
    await expect(simulate(latest, { limit: 128, window: 2 ** 20 })).resolves.toBeDefined();
    expect(() => boundaryAttack({ ...options, startMs: 2 ** 50 - 2 ** 22 + 1 })).toThrow(pastTheEnd);
  });
});
