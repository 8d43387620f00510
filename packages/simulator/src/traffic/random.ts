import { uniformFloat64 } from 'pure-rand/distribution/uniformFloat64';
import { xoroshiro128plusFromState } from 'pure-rand/generator/xoroshiro128plus';
import { MAX_ARRIVALS, tooManyDrawn } from './arrival.js';

/** A seeded source of uniform numbers in [0, 1): the same seed always gives the same traffic. */
export type Random = () => number;

const MASK_64 = (1n << 64n) - 1n;
const GOLDEN_GAMMA = 0x9e3779b97f4a7c15n;

/** One step of SplitMix64 (Steele, Lea & Flood 2014), the seeding Vigna recommends for xoroshiro. */
function splitMix64(state: bigint): { state: bigint; value: bigint } {
  const next = (state + GOLDEN_GAMMA) & MASK_64;
  let z = next;
  z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK_64;
  z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & MASK_64;
  return { state: next, value: z ^ (z >> 31n) };
}

/**
 * `stream` gives a generator several independent sources from one seed. The seed is mixed
 * into all 128 bits of state: pure-rand's `xoroshiro128plus(seed)` keeps only its low 32 bits
 * and starts small seeds next to an all-ones state, whose first output is ≈ 0.99999998 (a
 * first Poisson gap of ~18 mean gaps).
 */
export function seededRandom(seed: number, stream: 0 | 1 = 0): Random {
  const first = splitMix64(BigInt(seed) * 2n + BigInt(stream));
  const second = splitMix64(first.state);
  const words = [first.value >> 32n, first.value, second.value >> 32n, second.value].map((w) =>
    Number(BigInt.asIntN(32, w)),
  );
  const rng = xoroshiro128plusFromState(words);
  return () => uniformFloat64(rng);
}

/**
 * Arrival times (whole ms) of a Poisson process of `ratePerMs` in [startMs, endMs):
 * exponential gaps, the textbook model of independent clients. Their number is random, so
 * more than `most` throws `ERR_SLUICE_INVALID_TRAFFIC` rather than pass the cap on a call's
 * requests.
 */
export function poissonTimes(
  random: Random,
  ratePerMs: number,
  startMs: number,
  endMs: number,
  most = MAX_ARRIVALS,
): number[] {
  const times: number[] = [];
  if (ratePerMs <= 0) return times;
  const gap = () => -Math.log(1 - random()) / ratePerMs;
  // Summed from 0, not from startMs: added to an epoch time (some 1.7e12), a gap below 1e-4 ms
  // was lost to rounding, and the times stood still (an endless loop at 10M requests a second).
  const spanMs = endMs - startMs;
  for (let offset = gap(); offset < spanMs; offset += gap()) {
    if (times.length === most) throw tooManyDrawn();
    // Floored before it is added: the sum rounds to a whole ms, so startMs + 99.9999 read as the end.
    times.push(startMs + Math.floor(offset));
  }
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
