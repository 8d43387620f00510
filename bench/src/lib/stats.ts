/** Median of the values; NaN for none. */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/** Geometric mean of positive values: the mean of quotients that a factor common to one side cancels in. */
export function geometricMean(values: readonly number[]): number {
  return Math.exp(values.reduce((sum, v) => sum + Math.log(v), 0) / values.length);
}

/** Coefficient of variation (sample standard deviation over mean). */
export function cv(values: readonly number[]): number {
  if (values.length < 2) return 0;
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  const variance = values.reduce((a, b) => a + (b - mean) ** 2, 0) / (values.length - 1);
  return Math.sqrt(variance) / mean;
}

/** The q-quantile (0..1) of an already sorted list, nearest rank. */
export function quantileSorted(sorted: ArrayLike<number>, q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank] as number;
}

/**
 * Fixed-bucket latency histogram: 1 µs buckets up to 100 ms, then 1 ms buckets up to a minute
 * (the last one holding anything slower), so a slow tail is measured rather than cut at
 * 100 ms. Recording is an array increment, cheap enough to run per response inside the load
 * generator.
 */
export class Histogram {
  private readonly fine = new Uint32Array(100_001);
  private readonly coarse = new Uint32Array(60_001);
  count = 0;

  record(ms: number): void {
    const us = Math.max(0, Math.round(ms * 1000));
    if (us <= 100_000) this.fine[us] = (this.fine[us] as number) + 1;
    else {
      const bucket = Math.min(60_000, Math.round(ms));
      this.coarse[bucket] = (this.coarse[bucket] as number) + 1;
    }
    this.count++;
  }

  /** Quantile in ms. */
  quantile(q: number): number {
    const target = Math.max(1, Math.ceil(q * this.count));
    let seen = 0;
    for (let i = 0; i < this.fine.length; i++) {
      seen += this.fine[i] as number;
      if (seen >= target) return i / 1000;
    }
    for (let i = 0; i < this.coarse.length; i++) {
      seen += this.coarse[i] as number;
      if (seen >= target) return i;
    }
    return Number.NaN;
  }
}
