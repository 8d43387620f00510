import { fileURLToPath } from 'node:url';
import type { Traffic } from '../traffic/arrival.js';
import { boundaryAttack } from '../traffic/boundary-attack.js';
import { bursts } from '../traffic/bursts.js';
import { diurnal } from '../traffic/diurnal.js';
import { heavyTailed } from '../traffic/heavy-tailed.js';
import { steady } from '../traffic/steady.js';
import { readTrace } from '../traffic/trace.js';

export type ChartKind = 'window' | 'retry-after' | 'queue';

/** One traffic pattern run through every algorithm, with the policy all of them enforce. */
export interface Scenario {
  /** File-name stem of its charts. */
  id: string;
  title: string;
  /** What the traffic is and what to look for, for the page. */
  about: string;
  traffic: () => Traffic | Promise<Traffic>;
  limit: number;
  windowMs: number;
  /** Width of one time bucket in the charts. @default about 1/120 of the traffic's span */
  bucketMs?: number;
  /** Generated traffic starts at 0 and the charts run to here. @default the recorded trace's own span */
  endMs?: number;
  /** Charts beyond offered-vs-admitted. */
  charts: readonly ChartKind[];
  /** Many clients, realistic mix: the sliding window counter's error is measured on it. */
  realistic?: boolean;
  /** Higher limits at which to measure the counter's error on the same traffic too. */
  errorAtLimits?: readonly number[];
}

export const SAMPLE_TRACE = fileURLToPath(new URL('../../traces/sample-access.log', import.meta.url));

/** One client under 100 requests per 10 s: easy to follow on a chart. */
const single = {
  limit: 100,
  windowMs: 10_000,
  bucketMs: 1_000,
  endMs: 120_000,
} as const;

/** The recorded trace's file and policy; `traffic`, when given, is the file already read. */
export interface TraceScenario {
  path: string;
  limit: number;
  windowMs: number;
  traffic?: Traffic;
}

/**
 * Text as a markdown code span (CommonMark 6.1): a path can hold backticks, which would close
 * a span of one, so the fence is longer than any run of them inside, and padded where the text
 * starts or ends with one (or with a space, which a span trims). A line break could start a
 * heading on the page, so it shows as U+FFFD.
 */
function codeSpan(text: string): string {
  const longest = Math.max(0, ...(text.match(/`+/g) ?? []).map((run) => run.length));
  const fence = '`'.repeat(longest + 1);
  const pad = /^[` ]|[` ]$/.test(text) ? ' ' : '';
  return `${fence}${pad}${text.replace(/[\r\n]/g, '\uFFFD')}${pad}${fence}`;
}

export function scenarios(trace: TraceScenario): Scenario[] {
  return [
    {
      id: 'steady-under',
      title: 'Steady, under the limit',
      about: 'One client at 8 requests/s against 100 per 10 s (10/s). Every algorithm should admit everything.',
      traffic: () => steady({ ratePerSecond: 8, duration: '2m' }),
      ...single,
      charts: [],
    },
    {
      id: 'steady-over',
      title: 'Steady, over the limit',
      about:
        'One client at 15 requests/s against 10/s. What differs is the shape: fixed windows and the sliding log admit a block of 100 and then refuse until the window moves on (telling the client to wait seconds), while the counter (after its first window) and the buckets settle at the limit and spread refusals evenly (waits of a fraction of a second). The buckets first spend their full burst.',
      traffic: () => steady({ ratePerSecond: 15, duration: '2m' }),
      ...single,
      charts: ['retry-after'],
    },
    {
      id: 'bursts',
      title: 'Bursts',
      about:
        'One client at 4 requests/s with a burst of 150 within one second every 30 s. The buckets let a burst of up to their capacity (here 100) through at once. Queue mode shapes instead: gcra with `burst: 10` and `queue: { maxDelayMs: 10000 }` lets 10 through at once, holds the rest and passes them on at 10/s, and refuses only what would wait longer than 10 s.',
      traffic: () =>
        bursts({
          baseRatePerSecond: 4,
          burstSize: 150,
          burstEvery: '30s',
          duration: '2m',
        }),
      ...single,
      charts: ['window', 'queue'],
    },
    {
      id: 'boundary-attack',
      title: 'Fixed-window boundary attack',
      about:
        'An attacker sends 100 requests in the half second before a window boundary and 100 in the half second after it, at 10, 30 and 50 s. Fixed windows admit all 200 within one second: twice the limit in one window. The sliding log never admits more than 100 in any 10 s; the counter and the buckets stay close to it.',
      traffic: () =>
        boundaryAttack({
          limit: 100,
          window: '10s',
          attacks: 3,
          spread: '500ms',
        }),
      ...single,
      bucketMs: 500,
      endMs: 60_000,
      charts: ['window'],
    },
    {
      id: 'diurnal',
      title: 'A day with a flash crowd',
      about:
        'A simulated day: 20,000 clients with Zipf-distributed shares (exponent 1.1), 5 requests/s on average following a 24-hour cycle (quiet at 03:00, busiest at 15:00), and a flash crowd of 1,000 newcomers adding 20 requests/s from 11:00 to 11:30. Each client may send 30 per minute. Only the busiest few clients ever meet the limit; the crowd, each sending little, passes.',
      traffic: () =>
        diurnal({
          clients: 20_000,
          meanRatePerSecond: 5,
          flashCrowd: {
            at: '11h',
            duration: '30m',
            extraRatePerSecond: 20,
            clients: 1_000,
          },
        }),
      limit: 30,
      windowMs: 60_000,
      bucketMs: 15 * 60_000,
      endMs: 86_400_000,
      charts: [],
      realistic: true,
    },
    {
      id: 'heavy-tailed',
      title: 'Many clients, heavy-tailed',
      about:
        '50,000 clients sending 200 requests/s together for 30 minutes, each request from a client drawn by Zipf’s law (exponent 1.1): a few clients send most of the traffic. Each client may send 100 per minute.',
      traffic: () => heavyTailed({ clients: 50_000, ratePerSecond: 200, duration: '30m' }),
      limit: 100,
      windowMs: 60_000,
      bucketMs: 60_000,
      endMs: 30 * 60_000,
      charts: [],
      realistic: true,
      errorAtLimits: [300, 1_000, 3_000],
    },
    {
      id: 'recorded-trace',
      title: 'Recorded trace',
      about:
        trace.path === SAMPLE_TRACE
          ? 'The sample access log shipped in `packages/simulator/traces/` (synthetic: 60 clients, and a scraper that bursts every two minutes), keyed by client address. Replay your own with `pnpm simulate --trace access.log --limit 60 --window 1m`.'
          : `Replayed from ${codeSpan(trace.path)}, keyed by client.`,
      traffic: () => trace.traffic ?? readTrace(trace.path),
      limit: trace.limit,
      windowMs: trace.windowMs,
      charts: ['window'],
      realistic: true,
    },
  ];
}
