import { FIXED_HEADERS, REDIS_ROUND_TRIP } from '../http/apps/app.js';
import { median } from '../lib/stats.js';
import type { InprocResult, RunResults } from '../results.js';
import { serviceTargets } from '../service/targets.js';
import { findHttp, type HttpRow } from './http-summary.js';
import { redisStoreTargets } from './local-first-targets.js';

export interface TargetCheck {
  target: string;
  /** The measured value: a ratio, or bytes for the memory target. */
  value: number | undefined;
  unit: 'ratio' | 'bytes';
  goal: string;
  /** What the peer or baseline reached, for context. */
  context: string;
  met: boolean | undefined;
}

/** A cell's decisions per second: the median when the run measured it more than once. */
export const cell = (
  results: readonly InprocResult[],
  contender: string,
  keys: number,
  concurrency: number,
  mode: 'pass' | 'deny' = 'pass',
): number | undefined => {
  const runs = results
    .filter((r) => r.contender === contender && r.keys === keys && r.concurrency === concurrency && r.mode === mode)
    .map((r) => r.opsPerSec)
    .filter((ops): ops is number => ops !== undefined);
  return runs.length === 0 ? undefined : median(runs);
};

const atLeast = (value: number | undefined, goal: number) =>
  value === undefined || Number.isNaN(value) ? undefined : value >= goal;
const atMost = (value: number | undefined, goal: number) =>
  value === undefined || Number.isNaN(value) ? undefined : value <= goal;
const over = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined ? undefined : a / b);

/**
 * What the floors reached against the same peer: the most a target over that peer can read
 * on this machine with a Map, and with lru-cache, as the store's map.
 */
function floorContext(inproc: readonly InprocResult[], peer: number | undefined): string {
  const map = over(cell(inproc, 'floor-map:memory', 100_000, 1), peer);
  const lru = over(cell(inproc, 'floor-lru-cache:memory', 100_000, 1), peer);
  if (map === undefined || lru === undefined) return '';
  return `; floors: Map ${map.toFixed(2)}, lru-cache ${lru.toFixed(2)}`;
}

/** A control's ratio to the bare framework, as context for a target read against it. */
function controlContext(http: readonly HttpRow[], framework: string, control: string, label: string): string {
  const ratio = findHttp(http, framework, control)?.ratio;
  return ratio !== undefined && Number.isFinite(ratio) ? `; ${label} ${ratio.toFixed(2)}` : '';
}

/** The targets of issue 5, each read from this run alone. */
export function checkTargets(results: RunResults, http: readonly HttpRow[]): TargetCheck[] {
  const checks: TargetCheck[] = [];
  const inproc = results.inproc;
  for (const algorithm of ['gcra', 'sliding-window-counter']) {
    const sluice = cell(inproc, `sluice:memory:${algorithm}`, 100_000, 1);
    const erl = cell(inproc, 'express-rate-limit:memory', 100_000, 1);
    const rlf = cell(inproc, 'rate-limiter-flexible:memory', 100_000, 1);
    const v1 = over(sluice, erl);
    const v2 = over(sluice, rlf);
    const floors = (peer: number | undefined) => floorContext(inproc, peer);
    checks.push(
      {
        target: `memory ${algorithm}, 100k keys, seq ÷ express-rate-limit MemoryStore`,
        value: v1,
        unit: 'ratio',
        goal: '≥ 1.50',
        context: `baseline 2.3 M/s${floors(erl)}`,
        met: atLeast(v1, 1.5),
      },
      {
        target: `memory ${algorithm}, 100k keys, seq ÷ rate-limiter-flexible memory`,
        value: v2,
        unit: 'ratio',
        goal: '≥ 3.00',
        context: `baseline 1.05 M/s${floors(rlf)}`,
        met: atLeast(v2, 3),
      },
    );
  }
  for (const algorithm of ['gcra', 'sliding-window-counter']) {
    const bytes = results.heap.find((h) => h.contender === `sluice:memory:${algorithm}`)?.heapBytesPerKey;
    checks.push({
      target: `heap bytes per key at 1M keys, ${algorithm}`,
      value: bytes,
      unit: 'bytes',
      goal: '≤ 120',
      context: 'peers 157–406',
      met: atMost(bytes, 120),
    });
  }
  for (const algorithm of ['gcra', 'sliding-window-counter']) {
    const v = over(
      cell(inproc, `sluice:redis:${algorithm}`, 100_000, 100),
      cell(inproc, 'rate-limiter-flexible:redis', 100_000, 100),
    );
    checks.push({
      target: `Redis ${algorithm}, 100 in flight ÷ rate-limiter-flexible Redis`,
      value: v,
      unit: 'ratio',
      goal: '≥ 1.50',
      context: 'baseline 96 k/s',
      met: atLeast(v, 1.5),
    });
    const cost = over(
      cell(inproc, `sluice:redis:${algorithm}`, 100_000, 100),
      cell(inproc, `sluice:redis:${algorithm}:3p`, 100_000, 100),
    );
    checks.push({
      target: `Redis ${algorithm}: cost of 3 policies ÷ cost of 1`,
      value: cost,
      unit: 'ratio',
      goal: '≤ 1.30',
      context: '100 in flight',
      met: atMost(cost, 1.3),
    });
  }
  const httpTargets: Array<[string, string, number, string]> = [
    ['fastify', 'sluice:memory', 0.93, '@fastify/rate-limit 0.81'],
    ['fastify', 'sluice:redis', 0.75, '@fastify/rate-limit Redis 0.50'],
    ['koa', 'sluice:memory', 0.85, 'koa-ratelimit 0.70'],
    ['express', 'sluice:memory', 0.97, 'express-rate-limit 0.79, rate-limiter-flexible 0.95'],
  ];
  for (const [framework, variant, goal, context] of httpTargets) {
    const v = findHttp(http, framework, variant)?.ratio;
    const controls = [controlContext(http, framework, FIXED_HEADERS, 'the fields alone')];
    if (variant.endsWith(':redis')) controls.push(controlContext(http, framework, REDIS_ROUND_TRIP, 'one INCR alone'));
    checks.push({
      target: `HTTP ${framework} + ${variant.replace(':', ' ')} ÷ bare ${framework}`,
      value: v,
      unit: 'ratio',
      goal: `≥ ${goal.toFixed(2)}`,
      context: [context, ...controls].join(''),
      met: atLeast(v, goal),
    });
  }
  for (const framework of ['express', 'fastify', 'koa']) {
    for (const variant of ['sluice:memory', 'sluice:redis']) {
      const pass = findHttp(http, framework, variant, 'pass');
      const deny = findHttp(http, framework, variant, 'deny');
      const v = over(deny?.ratio, pass?.ratio);
      checks.push({
        target: `HTTP ${framework} + ${variant.replace(':', ' ')}: 429 path ÷ pass path`,
        value: v,
        unit: 'ratio',
        goal: '≥ 1.00',
        context: 'req/s ratio',
        met: atLeast(v, 1),
      });
    }
  }
  const unwatched = cell(inproc, 'sluice:memory:gcra', 100_000, 1);
  const watchCost = (id: string) => over(unwatched, cell(inproc, id, 100_000, 1));
  const subscriberCost = watchCost('sluice:memory:gcra:subscriber');
  const metricsCost = watchCost('sluice:memory:gcra:metrics');
  checks.push({
    target: 'memory gcra, 100k keys, seq: cost with enableMetrics ÷ cost with nobody watching',
    value: metricsCost,
    unit: 'ratio',
    goal: '≤ 1.15',
    context: subscriberCost === undefined ? '' : `a subscriber that does nothing ${subscriberCost.toFixed(2)}`,
    met: atMost(metricsCost, 1.15),
  });
  checks.push(...redisStoreTargets(http));
  checks.push(...serviceTargets(results));
  return checks;
}
