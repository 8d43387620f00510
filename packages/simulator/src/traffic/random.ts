import { uniformFloat64 } from 'pure-rand/distribution/uniformFloat64';
import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';

/** A seeded source of uniform numbers in [0, 1): the same seed always gives the same traffic. */
export type Random = () => number;

export function seededRandom(seed: number): Random {
  const rng = xoroshiro128plus(seed);
  return () => uniformFloat64(rng);
}

/**
 * Arrival times (ms, fractional) of a Poisson process of `ratePerMs` in [startMs, endMs):
 * exponential gaps, the textbook model of independent clients.
 */
export function poissonTimes(random: Random, ratePerMs: number, startMs: number, endMs: number): number[] {
  const times: number[] = [];
  if (ratePerMs <= 0) return times;
  const gap = () => -Math.log(1 - random()) / ratePerMs;
  for (let t = startMs + gap(); t < endMs; t += gap()) times.push(t);
  return times;
}

/**
 * Picks ranks 0…n−1 with probability ∝ 1/(rank+1)^exponent: Zipf's law, the heavy tail of
 * real client populations where a few clients send most of the requests.
 */
export function zipfPicker(random: Random, n: number, exponent: number): () => number {
  const cumulative = new Float64Array(n);
  let total = 0;
  for (let rank = 0; rank < n; rank++) {
    total += 1 / (rank + 1) ** exponent;
    cumulative[rank] = total;
  }
  return () => {
    const target = random() * total;
    let low = 0;
    let high = n - 1;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if ((cumulative[mid] as number) <= target) low = mid + 1;
      else high = mid;
    }
    return low;
  };
}
