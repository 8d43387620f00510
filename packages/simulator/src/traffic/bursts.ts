import { type Duration, describe, toMs } from '@sluice/core';
import {
  type Arrival,
  checkArrivalCount,
  type GeneratorOptions,
  generatorOptions,
  keyOption,
  merge,
  orDefault,
  positiveInteger,
  positiveNumber,
  SPAN_OPTIONS,
  span,
  trafficError,
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
  burstLength?: Duration | undefined;
  /** @default 'client' */
  key?: string | undefined;
}

/** One client: steady traffic with a burst of `burstSize` requests every `burstEvery`. */
export function bursts(options: BurstsOptions): Arrival[] {
  const known = [...SPAN_OPTIONS, 'baseRatePerSecond', 'burstSize', 'burstEvery', 'burstLength', 'key'];
  const { startMs, endMs, seed } = span(generatorOptions(options, known));
  const key = keyOption(options.key, 'key', 'client');
  const size = positiveInteger(options.burstSize, 'burstSize');
  const everyMs = toMs(options.burstEvery, 'burstEvery');
  const lengthMs = toMs(orDefault(options.burstLength, '1s'), 'burstLength');
  const ratePerSecond = positiveNumber(options.baseRatePerSecond, 'baseRatePerSecond');
  // The first burst comes one `burstEvery` in; bursts longer than the gap between them overlap.
  if (startMs + everyMs >= endMs)
    throw trafficError(
      `Traffic option \`burstEvery\` must be shorter than the traffic's \`duration\` (${endMs - startMs} ms), or no burst comes; received ${describe(options.burstEvery)}.`,
    );
  if (lengthMs > everyMs)
    throw trafficError(
      `Traffic option \`burstLength\` must be at most \`burstEvery\` (${everyMs} ms), or bursts overlap; received ${describe(options.burstLength)}.`,
    );
  checkArrivalCount(Math.floor((endMs - startMs) / everyMs) * size + ((endMs - startMs) * ratePerSecond) / 1000);
  const random = seededRandom(seed, 1);
  const burst: Arrival[] = [];
  // The first burst comes after one quiet period, so the chart shows the calm before it.
  for (let from = startMs + everyMs; from < endMs; from += everyMs) {
    for (let i = 0; i < size; i++) burst.push({ at: Math.floor(from + random() * lengthMs), key, cost: 1 });
  }
  const base = steady({ duration: options.duration, startMs, seed, key, ratePerSecond });
  return merge(
    base,
    burst.filter((a) => a.at < endMs),
  );
}
