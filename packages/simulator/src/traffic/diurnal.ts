import { type Duration, describe, toMs } from '@sluice/core';
import {
  type Arrival,
  checkArrivalCount,
  clientCount,
  DAY_MS,
  type GeneratorOptions,
  generatorOptions,
  MAX_ARRIVALS,
  merge,
  offsetMs,
  orDefault,
  poissonMost,
  positiveInteger,
  positiveNumber,
  SPAN_OPTIONS,
  span,
  trafficError,
} from './arrival.js';
import { poissonTimes, seededRandom, zipfPicker } from './random.js';

export interface FlashCrowd {
  /** When it starts, from the start of the traffic. */
  at: Duration;
  duration: Duration;
  /** Requests per second the crowd adds on top of the usual traffic. */
  extraRatePerSecond: number;
  /** Distinct newcomers in the crowd, each sending a small share. */
  clients: number;
}

export interface DiurnalOptions extends Omit<GeneratorOptions, 'duration'> {
  /** @default '1d' */
  duration?: Duration | undefined;
  /** Regular clients, with Zipf-distributed shares, at most `MAX_CLIENTS` (5,000,000). */
  clients: number;
  /** Average requests per second over the day, all clients together. */
  meanRatePerSecond: number;
  /** How far the rate swings around the mean: peak = mean × (1 + swing), trough = mean × (1 − swing). @default 0.8 */
  swing?: number | undefined;
  /** When the daily peak comes, from the start. @default '15h' */
  peakAt?: Duration | undefined;
  /** Zipf exponent of the regular clients' shares. @default 1.1 */
  exponent?: number | undefined;
  flashCrowd?: FlashCrowd | undefined;
}

/**
 * A day of traffic from many clients: the rate follows a 24-hour cosine (quiet at night,
 * busy in the afternoon), optionally with a flash crowd of newcomers on top. Regular clients
 * are `client-<rank>`, the crowd `crowd-<n>`.
 */
export function diurnal(options: DiurnalOptions): Arrival[] {
  const known = [...SPAN_OPTIONS, 'clients', 'meanRatePerSecond', 'swing', 'peakAt', 'exponent', 'flashCrowd'];
  const { startMs, endMs, seed } = span({
    ...generatorOptions(options, known),
    duration: orDefault(options.duration, '1d'),
  });
  const clients = clientCount(options.clients);
  const mean = positiveNumber(options.meanRatePerSecond, 'meanRatePerSecond');
  const swing = positiveNumber(orDefault(options.swing, 0.8), 'swing', true);
  if (swing > 1) throw trafficError(`Traffic option \`swing\` must be at most 1; received ${swing}.`);
  const peakMs = startMs + offsetMs(orDefault(options.peakAt, '15h'), 'peakAt');
  const exponent = positiveNumber(orDefault(options.exponent, 1.1), 'exponent');
  const crowd = flashCrowd(options.flashCrowd, startMs, endMs);
  // The day and the crowd together, before either is made: checked apart, each could take the
  // whole cap. Thinning draws every regular request at the peak rate before it keeps some.
  const regularDraws = ((endMs - startMs) * mean * (1 + swing)) / 1000;
  checkArrivalCount(poissonMost(regularDraws + (crowd === undefined ? 0 : crowd.expected)));
  const random = seededRandom(seed);
  const pick = zipfPicker(random, clients, exponent);
  // Thinning (Lewis–Shedler): draw at the peak rate, keep each arrival with rate(t) / peak.
  const regular = poissonTimes(random, (mean * (1 + swing)) / 1000, startMs, endMs)
    .filter((t) => random() * (1 + swing) < 1 + swing * Math.cos((2 * Math.PI * (t - peakMs)) / DAY_MS))
    .map((t): Arrival => ({ at: t, key: `client-${pick() + 1}`, cost: 1 }));
  if (crowd === undefined) return regular;
  const crowdRandom = seededRandom(seed, 1);
  const extra = poissonTimes(crowdRandom, crowd.ratePerMs, crowd.from, crowd.until, MAX_ARRIVALS - regular.length).map(
    (t): Arrival => ({ at: t, key: `crowd-${Math.floor(crowdRandom() * crowd.clients) + 1}`, cost: 1 }),
  );
  return merge(regular, extra);
}

/** The `flashCrowd` option checked, its span cut to the traffic's, and the requests it is expected to add. */
function flashCrowd(crowd: FlashCrowd | undefined, startMs: number, endMs: number) {
  if (crowd === undefined) return undefined;
  if (typeof crowd !== 'object' || crowd === null || Array.isArray(crowd)) {
    throw trafficError(
      `Traffic option \`flashCrowd\` must be { at, duration, extraRatePerSecond, clients } or left out; received ${describe(crowd)}.`,
    );
  }
  generatorOptions(crowd, ['at', 'duration', 'extraRatePerSecond', 'clients'], 'flashCrowd');
  const from = startMs + offsetMs(crowd.at, 'flashCrowd.at');
  const clients = positiveInteger(crowd.clients, 'flashCrowd.clients');
  const ratePerMs = positiveNumber(crowd.extraRatePerSecond, 'flashCrowd.extraRatePerSecond') / 1000;
  const until = Math.min(endMs, from + toMs(crowd.duration, 'flashCrowd.duration'));
  // A crowd after the traffic ends would add nothing, and the chart would show none.
  if (from >= endMs)
    throw trafficError(
      `Traffic option \`flashCrowd.at\` must fall within the traffic's \`duration\` (${endMs - startMs} ms); received ${describe(crowd.at)}.`,
    );
  return { from, until, clients, ratePerMs, expected: Math.max(0, until - from) * ratePerMs };
}
