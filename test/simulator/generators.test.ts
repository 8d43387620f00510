import { type Arrival, boundaryAttack, bursts, diurnal, heavyTailed, steady } from '@sluice/simulator';
import { describe, expect, it } from 'vitest';

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
  });
});
