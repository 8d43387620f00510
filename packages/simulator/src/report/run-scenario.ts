import type { AlgorithmName, PolicyOptions, Throttle } from '@sluice/core';
import { formatCount } from '../chart/ticks.js';
import { type CountingEveryRequest, counterErrorCountingEveryRequest } from '../measure/counting-every-request.js';
import { compareWithExactLog, type ExactLogComparison } from '../measure/exact-log.js';
import {
  admittedSeries,
  type Buckets,
  delaySeries,
  offeredSeries,
  releasedSeries,
  retryAfterSeries,
  type Series,
} from '../measure/series.js';
import { type Totals, totals } from '../measure/totals.js';
import { trailingWindowSeries, type WorstWindow, worstWindow } from '../measure/window-excess.js';
import { simulate } from '../simulate.js';
import { DAY_MS, type Traffic, trafficError } from '../traffic/arrival.js';
import type { Scenario } from './scenarios.js';

/** What one limiter did to a scenario's traffic: figures and the series its charts need. */
export interface RunResult {
  /** The algorithm, or `gcra + queue` for queue mode. */
  name: string;
  totals: Totals;
  worst: WorstWindow;
  admitted: Series;
  retryAfter: Series;
  /** The trailing-window total of the busiest client. */
  window?: Series;
  /** Queue mode only. */
  released?: Series;
  delay?: Series;
  /** Sliding window counter only, on realistic traffic. */
  sameHistory?: ExactLogComparison;
}

/**
 * What the charts and tables count: a limit counts cost, so where a request can cost more than 1
 * the figures are cost units, and labelled so beside the number of requests.
 */
export type Unit = 'requests' | 'cost units';

/** `Buckets` with every field given, as a scenario's charts frame them. */
export type FramedBuckets = { [K in keyof Buckets]-?: Exclude<Buckets[K], undefined> };

export interface ScenarioResult {
  scenario: Scenario;
  buckets: FramedBuckets;
  requests: number;
  /** `requests` when every request costs 1. */
  unit: Unit;
  /** The traffic's total cost. */
  cost: number;
  clients: number;
  /** The client the window chart follows: the one that sent most. */
  busiestKey: string;
  offered: Series;
  runs: RunResult[];
  queue?: RunResult;
  /** The same small-burst gcra without the queue, to compare the queue with. */
  shapingRefuses?: RunResult;
  /** The counter scored as Cloudflare scored it, on realistic traffic. */
  countingEveryRequest?: CountingEveryRequest;
  /** The same at other limits: how the error depends on how much traffic is near the limit. */
  errorAtLimits?: { limit: number; result: CountingEveryRequest }[];
}

/** Queue mode as the page shows it: nginx-style shaping with a small burst. */
export const QUEUE = { burst: 10, maxDelayMs: 10_000 } as const;

/** Algorithms in the order the page and the legends list them. */
export const ALGORITHMS: readonly AlgorithmName[] = [
  'fixed-window',
  'sliding-window-log',
  'sliding-window-counter',
  'token-bucket',
  'leaky-bucket',
  'gcra',
];

/** Runs every algorithm (and queue mode where the scenario asks) on the scenario's traffic, under `throttle`. */
export async function runScenario(scenario: Scenario, throttle?: Throttle): Promise<ScenarioResult> {
  const traffic = await scenario.traffic();
  if (traffic.length === 0) throw trafficError(`The ${scenario.id} scenario has no requests to simulate.`);
  const first = traffic[0]?.at ?? 0;
  const last = traffic[traffic.length - 1]?.at ?? 0;
  const bucketMs = scenario.bucketMs ?? roundBucket((last - first) / 120);
  const startMs = scenario.endMs === undefined ? Math.floor(first / bucketMs) * bucketMs : 0;
  const buckets = {
    bucketMs,
    startMs,
    endMs: scenario.endMs ?? Math.max(startMs + bucketMs, last + 1),
  };
  const counts = new Map<string, number>();
  let cost = 0;
  for (const a of traffic) {
    counts.set(a.key, (counts.get(a.key) ?? 0) + a.cost);
    cost += a.cost;
  }
  const busiestKey = [...counts].reduce((best, entry) => (entry[1] > best[1] ? entry : best), ['', -1])[0];
  const policy = { limit: scenario.limit, window: scenario.windowMs };
  const run = (name: string, options: PolicyOptions) =>
    measure(name, traffic, options, throttle, scenario, buckets, busiestKey);
  const runs: RunResult[] = [];
  for (const algorithm of ALGORITHMS) runs.push(await run(algorithm, { ...policy, algorithm }));
  const result: ScenarioResult = {
    scenario,
    buckets,
    requests: traffic.length,
    unit: traffic.every((a) => a.cost === 1) ? 'requests' : 'cost units',
    cost,
    clients: counts.size,
    busiestKey,
    offered: offeredSeries(traffic, buckets),
    runs,
  };
  if (scenario.charts.includes('queue')) {
    // A small burst, so that the queue (not the bucket) takes the burst: traffic shaping as nginx does it.
    const refusing: PolicyOptions = {
      ...policy,
      algorithm: 'gcra',
      burst: QUEUE.burst,
    };
    result.shapingRefuses = await run(`gcra, burst ${QUEUE.burst}`, refusing);
    result.queue = await run(`gcra, burst ${QUEUE.burst} + queue`, {
      ...refusing,
      queue: { maxDelayMs: QUEUE.maxDelayMs },
    });
  }
  if (scenario.realistic) {
    result.countingEveryRequest = counterErrorCountingEveryRequest(traffic, scenario.limit, scenario.windowMs);
    result.errorAtLimits = (scenario.errorAtLimits ?? []).map((limit) => ({
      limit,
      result: counterErrorCountingEveryRequest(traffic, limit, scenario.windowMs),
    }));
  }
  return result;
}

/** The line the command prints when a scenario is done. */
export function scenarioDone(result: ScenarioResult): string {
  const limiters = result.runs.length + (result.queue ? 1 : 0) + (result.shapingRefuses ? 1 : 0);
  return `${result.scenario.id}: ${formatCount(result.requests, 'request')} × ${limiters} limiters`;
}

async function measure(
  name: string,
  traffic: Traffic,
  options: PolicyOptions,
  throttle: Throttle | undefined,
  scenario: Scenario,
  buckets: FramedBuckets,
  busiestKey: string,
): Promise<RunResult> {
  const { decisions } = await simulate(traffic, throttle === undefined ? options : { ...options, throttle });
  const result: RunResult = {
    name,
    totals: totals(decisions),
    worst: worstWindow(decisions, scenario.limit, scenario.windowMs),
    admitted: admittedSeries(decisions, buckets),
    retryAfter: retryAfterSeries(decisions, buckets),
  };
  if (scenario.charts.includes('window')) {
    const busiest = decisions.filter((d) => d.key === busiestKey);
    result.window = trailingWindowSeries(busiest, scenario.windowMs, buckets);
  }
  if (options.queue !== undefined) {
    result.released = releasedSeries(decisions, buckets);
    result.delay = delaySeries(decisions, buckets);
  }
  if (scenario.realistic && options.algorithm === 'sliding-window-counter') {
    result.sameHistory = compareWithExactLog(decisions, scenario.limit, scenario.windowMs);
  }
  return result;
}

/**
 * A bucket width people read easily and at least `ms`: 1, 2, 5 × 10^n ms, whole seconds,
 * minutes, hours, or 1, 2, 5 × 10^n days. No upper bound, so that a trace spanning years
 * still gets about 120 buckets rather than one per day.
 */
function roundBucket(ms: number): number {
  const choices = [1, 2, 5, 10, 20, 50, 100, 250, 500, 1_000, 2_000, 5_000, 10_000, 15_000, 30_000, 60_000];
  const more = [120_000, 300_000, 600_000, 900_000, 1_800_000, 3_600_000, 7_200_000, 21_600_000, DAY_MS];
  const within = [...choices, ...more].find((c) => c >= ms);
  if (within !== undefined) return within;
  for (let days = 1; ; days *= 10) {
    for (const step of [2, 5, 10]) if (step * days * DAY_MS >= ms) return step * days * DAY_MS;
  }
}
