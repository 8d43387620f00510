import {
  type Arrival,
  checkArrivalCount,
  type GeneratorOptions,
  generatorOptions,
  keyOption,
  positiveNumber,
  SPAN_OPTIONS,
  span,
} from './arrival.js';
import { seededRandom } from './random.js';

export interface SteadyOptions extends GeneratorOptions {
  ratePerSecond: number;
  /** @default 'client' */
  key?: string | undefined;
}

/**
 * One client at a constant rate: one request at a random time in each gap, so they do not all
 * land on the same millisecond phase. Any window then holds the rate's share, give or take
 * one request. A last gap cut short by the end keeps its request inside what is left of it
 * (jittered by a whole gap, it could land past the end): every request is in
 * [startMs, startMs + duration).
 */
export function steady(options: SteadyOptions): Arrival[] {
  const { startMs, endMs, seed } = span(generatorOptions(options, [...SPAN_OPTIONS, 'ratePerSecond', 'key']));
  const rate = positiveNumber(options.ratePerSecond, 'ratePerSecond');
  checkArrivalCount(((endMs - startMs) * rate) / 1000);
  const gapMs = 1000 / rate;
  const random = seededRandom(seed);
  const key = keyOption(options.key, 'key', 'client');
  const arrivals: Arrival[] = [];
  // Each gap's start from its index, within the span: summed onto an epoch time, a gap below
  // 1e-4 ms was lost to rounding (an endless loop), and larger ones drifted (1,024,000
  // requests for 1,000,000).
  const spanMs = endMs - startMs;
  for (let i = 0; i * gapMs + gapMs / 2 < spanMs; i++) {
    const offset = i * gapMs;
    arrivals.push({ at: startMs + Math.floor(offset + random() * Math.min(gapMs, spanMs - offset)), key, cost: 1 });
  }
  return arrivals;
}
