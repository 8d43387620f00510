import { type Duration, toMs } from '@sluice/core';
import {
  type Arrival,
  type GeneratorOptions,
  generatorOptions,
  merge,
  positiveInteger,
  positiveNumber,
  span,
} from './arrival.js';
import { seededRandom } from './random.js';
import { steady } from './steady.js';

export interface BurstsOptions extends GeneratorOptions {
  /** The quiet traffic between bursts. */
  baseRatePerSecond: number;
  /** Requests in each burst. */
  burstSize: number;
  /** Time from the start of one burst to the next. */
  burstEvery: Duration;
  /** How long one burst lasts. @default '1s' */
  burstLength?: Duration;
  /** @default 'client' */
  key?: string;
}

/** One client: steady traffic with a burst of `burstSize` requests every `burstEvery`. */
export function bursts(options: BurstsOptions): Arrival[] {
  const { startMs, endMs, seed } = span(generatorOptions(options));
  const key = options.key ?? 'client';
  const size = positiveInteger(options.burstSize, 'burstSize');
  const everyMs = toMs(options.burstEvery, 'burstEvery');
  const lengthMs = toMs(options.burstLength ?? '1s', 'burstLength');
  const random = seededRandom(seed, 1);
  const burst: Arrival[] = [];
  // The first burst comes after one quiet period, so the chart shows the calm before it.
  for (let from = startMs + everyMs; from < endMs; from += everyMs) {
    for (let i = 0; i < size; i++) burst.push({ at: Math.floor(from + random() * lengthMs), key, cost: 1 });
  }
  const base = steady({ ...options, ratePerSecond: positiveNumber(options.baseRatePerSecond, 'baseRatePerSecond') });
  return merge(
    base,
    burst.filter((a) => a.at < endMs),
  );
}
