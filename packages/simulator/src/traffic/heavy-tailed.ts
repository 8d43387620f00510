import {
  type Arrival,
  checkArrivalCount,
  clientCount,
  type GeneratorOptions,
  generatorOptions,
  keyOption,
  orDefault,
  poissonMost,
  positiveNumber,
  SPAN_OPTIONS,
  span,
} from './arrival.js';
import { poissonTimes, seededRandom, zipfPicker } from './random.js';

export interface HeavyTailedOptions extends GeneratorOptions {
  /** Distinct clients, at most `MAX_CLIENTS` (5,000,000). */
  clients: number;
  /** Requests per second from all clients together. */
  ratePerSecond: number;
  /** Zipf exponent s: client of rank r sends ∝ 1/r^s. Around 1 for web traffic. @default 1.1 */
  exponent?: number | undefined;
  /** Key prefix; keys are `${prefix}${rank}`, rank 1 the busiest. @default 'client-' */
  keyPrefix?: string | undefined;
}

/**
 * Many clients whose shares follow Zipf's law: independent (Poisson) arrivals overall, each
 * request from a client drawn by rank. A few clients run far over any fair per-client limit
 * while the long tail sends a handful each.
 */
export function heavyTailed(options: HeavyTailedOptions): Arrival[] {
  const known = [...SPAN_OPTIONS, 'clients', 'ratePerSecond', 'exponent', 'keyPrefix'];
  const { startMs, endMs, seed } = span(generatorOptions(options, known));
  const clients = clientCount(options.clients);
  const rate = positiveNumber(options.ratePerSecond, 'ratePerSecond');
  checkArrivalCount(poissonMost(((endMs - startMs) * rate) / 1000));
  const exponent = positiveNumber(orDefault(options.exponent, 1.1), 'exponent');
  const prefix = keyOption(options.keyPrefix, 'keyPrefix', 'client-', true);
  const random = seededRandom(seed);
  const pick = zipfPicker(random, clients, exponent);
  return poissonTimes(random, rate / 1000, startMs, endMs).map((t) => ({
    at: t,
    key: `${prefix}${pick() + 1}`,
    cost: 1,
  }));
}
