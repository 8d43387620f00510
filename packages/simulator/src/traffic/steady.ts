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
  key?: string;
}

/**
 * One client at a constant rate: requests evenly spaced, each moved by up to half a gap at
 * random so they do not all land on the same millisecond phase. Any window then holds the
 * rate's share, give or take one request.
 */
export function steady(options: SteadyOptions): Arrival[] {
  const { startMs, endMs, seed } = span(generatorOptions(options, [...SPAN_OPTIONS, 'ratePerSecond', 'key']));
  const rate = positiveNumber(options.ratePerSecond, 'ratePerSecond');
  checkArrivalCount(((endMs - startMs) * rate) / 1000);
  const gapMs = 1000 / rate;
  const random = seededRandom(seed);
  const key = keyOption(options.key, 'key', 'client');
  const arrivals: Arrival[] = [];
  for (let t = startMs + gapMs / 2; t < endMs; t += gapMs) {
    arrivals.push({ at: Math.floor(t + (random() - 0.5) * gapMs), key, cost: 1 });
  }
  return arrivals;
}
