import { FOREIGN_LIMIT } from '../lib/cpu.js';
import { fixed, int, percent, rate, ratio } from '../lib/format.js';
import { describeHostSpeed } from '../lib/host-speed.js';
import { bytesPerKey, type RunResults } from '../results.js';
import { findHttp, type HttpRow } from './http-summary.js';
import { inprocTable, policyTable } from './inproc-tables.js';
import { serviceSection } from './service-table.js';
import { limiterName, table, verdict } from './table.js';
import type { TargetCheck } from './target-check.js';

function httpTable(rows: readonly HttpRow[], mode: 'pass' | 'deny'): string {
  const shown = rows.filter((r) => r.mode === mode && r.framework !== 'node');
  return table(
    [
      'framework',
      'limiter',
      'req/s',
      'min–max',
      'CV',
      'p50 ms',
      'p99 ms',
      mode === 'pass' ? 'ratio vs bare' : 'ratio vs bare 200',
      'ratio min–max',
      'server µs/req (Δ)',
      'redis cores',
      'expected status',
    ],
    shown.map((r) =>
      r.unavailable || r.error
        ? [
            r.framework,
            limiterName(r.variant),
            r.unavailable ? 'not available yet' : `error: ${r.error}`,
            '',
            '',
            '',
            '',
            '',
            '',
            '',
            '',
            '',
          ]
        : [
            r.framework,
            limiterName(r.variant),
            int(r.rps),
            `${int(r.minRps)}–${int(r.maxRps)}`,
            percent(r.cv),
            fixed(r.p50Ms, 2),
            fixed(r.p99Ms, 2),
            r.variant === 'bare' ? '1.00' : `**${ratio(r.ratio)}**`,
            r.variant === 'bare' || !Number.isFinite(r.ratio) ? '–' : `${ratio(r.ratioMin)}–${ratio(r.ratioMax)}`,
            `${fixed((r.serverCores * 1e6) / r.rps, 1)} (${r.variant === 'bare' ? '–' : `${r.addedUs >= 0 ? '+' : ''}${fixed(r.addedUs, 1)}`})`,
            r.redisCores === undefined ? '–' : fixed(r.redisCores, 2),
            percent(r.worstExpectedShare),
          ],
    ),
  );
}

/** Decimals a target's figures are shown to, by unit. */
const decimalsOf = (unit: TargetCheck['unit']): number => (unit === 'bytes' ? 0 : unit === 'µs' ? 2 : 3);

const measuredValue = (c: TargetCheck) => `${fixed(c.value, decimalsOf(c.unit))}${c.unit === 'µs' ? ' µs' : ''}`;

/** A target's range over its pairs (or rounds), to as many decimals as its median. */
function rangeShown({ spread, unit }: TargetCheck): string {
  if (spread === undefined || spread.count < 2) return '–';
  const digits = decimalsOf(unit);
  return `${fixed(spread.min, digits)}–${fixed(spread.max, digits)} (${spread.count})`;
}

/** Each target's median with its range over pairs, and the control or floor beside it. */
function targetsTable(checks: readonly TargetCheck[]): string {
  return table(
    ['target', 'measured', 'range (pairs)', 'goal', 'control / floor', 'context', 'verdict'],
    checks.map((c) => [
      c.target,
      measuredValue(c),
      rangeShown(c),
      c.goal,
      c.bound ?? '',
      c.context,
      verdict(c.met, c.boundMisses),
    ]),
  );
}

function ceilingSection(results: RunResults, http: readonly HttpRow[]): string {
  const node = findHttp(http, 'node', 'bare');
  const frameworks = ['express', 'fastify', 'koa'].map((f) => findHttp(http, f, 'bare'));
  const httpRows = [node, ...frameworks]
    .filter((r): r is HttpRow => r?.rps !== undefined)
    .map((r) => [
      r.framework === 'node' ? 'node `http.createServer`' : `${r.framework} (bare)`,
      int(r.rps),
      fixed(r.p99Ms, 2),
      fixed(r.serverCores, 2),
      node ? ratio(r.rps / node.rps) : '–',
    ]);
  const incr = results.redisBench.find((r) => r.command.startsWith('INCR') && r.pipeline === 16)?.opsPerSec;
  const redisRows = results.redisBench.map((r) =>
    r.unavailable
      ? [r.command, `-P ${r.pipeline}`, 'not available yet', '', '', '', '', '', '']
      : [
          r.command,
          `-P ${r.pipeline}`,
          int(r.opsPerSec),
          fixed(r.p50Ms, 2),
          fixed(r.p99Ms, 2),
          fixed(r.redisCores, 2),
          r.pipeline === 16 && incr && r.opsPerSec ? `${fixed((1e6 * (r.redisCores ?? 1)) / r.opsPerSec, 2)} µs` : '–',
          r.pipeline === 16 && incr && r.opsPerSec
            ? `${fixed((1e6 * (r.redisCores ?? 1)) / (r.opsPerSec * (r.decisions ?? 1)), 2)} µs`
            : '–',
          r.usecPerCall === undefined ? '–' : `${fixed(r.usecPerCall / (r.decisions ?? 1), 2)} µs`,
        ],
  );
  return [
    '### HTTP ceiling: what one core serves with no framework',
    '',
    table(['server', 'req/s', 'p99 ms', 'server cores', 'share of node ceiling'], httpRows),
    '',
    "### Redis ceiling: `redis-benchmark`, 50 clients, 100k random keys, sluice's own scripts via EVALSHA",
    '',
    table(
      [
        'command',
        'pipeline',
        'calls/s',
        'p50 ms',
        'p99 ms',
        'redis cores',
        'Redis CPU per call',
        'per decision',
        'commandstats µs per decision',
      ],
      redisRows,
    ),
  ].join('\n');
}

function heapTable(results: RunResults): string {
  return table(
    ['store', 'heap + external B/key', 'heap B/key', 'external B/key', 'RSS B/key', 'fill time s', 'fill rate /s'],
    results.heap.map((h) =>
      h.unavailable || h.error
        ? [h.contender, h.unavailable ?? `error: ${h.error}`, '', '', '', '', '']
        : [
            h.contender.replace(/^sluice:memory:/, 'sluice memory, '),
            fixed(bytesPerKey(h), 0),
            fixed(h.heapBytesPerKey, 0),
            fixed(h.externalBytesPerKey, 0),
            fixed(h.rssBytesPerKey, 0),
            fixed(h.fillSeconds, 2),
            rate(h.fillSeconds ? h.keys / h.fillSeconds : undefined),
          ],
    ),
  );
}

function notes(results: RunResults, http: readonly HttpRow[]): string[] {
  const lines: string[] = [];
  const disturbed = [
    ...results.inproc
      .filter((r) => r.foreign > FOREIGN_LIMIT)
      .map((r) => `in-process ${r.contender} ${r.keys} keys c=${r.concurrency} ${r.mode}`),
    ...http.filter((r) => r.foreign > FOREIGN_LIMIT).map((r) => `HTTP ${r.framework} ${r.variant} ${r.mode}`),
    ...results.redisBench
      .filter((r) => r.foreign > FOREIGN_LIMIT)
      .map((r) => `redis-benchmark ${r.command} -P ${r.pipeline}`),
    ...(results.service ?? [])
      .filter((r) => r.foreign > FOREIGN_LIMIT)
      .map((r) => `service ${r.store} ${r.inFlight} in flight`),
  ];
  const retried = results.inproc.filter((r) => r.retried).length + results.http.filter((r) => r.retried).length;
  lines.push(
    `- Foreign load (CPU used by other processes during a job) above ${FOREIGN_LIMIT} cores: ${disturbed.length === 0 ? 'none' : disturbed.join('; ')}. Jobs retried once because of it: ${retried}.`,
  );
  const unexpected = results.inproc.filter((r) => (r.unexpected ?? 0) > 0);
  if (unexpected.length > 0)
    lines.push(
      `- Cells whose sampled decisions were not all on the expected path: ${unexpected.map((r) => r.contender).join(', ')}.`,
    );
  const errors = [...results.inproc, ...results.http, ...results.heap].filter((r) => r.error !== undefined);
  if (errors.length > 0) lines.push(`- Errors: ${errors.length} (details in the raw JSON).`);
  const unavailable = new Set(
    [...results.inproc, ...results.http, ...results.heap, ...results.redisBench].flatMap((r) =>
      r.unavailable ? [r.unavailable] : [],
    ),
  );
  if (unavailable.size > 0)
    lines.push(`- Not measured because the package is not built yet: ${[...unavailable].join('; ')}.`);
  return lines;
}

/** The host's speed at the start and end of the run, for telling a slower host from a slower build. */
function hostSpeed({ host }: RunResults): string[] {
  if (host === undefined) return [];
  return [
    '',
    `Host at the start: ${describeHostSpeed(host.start)}; at the end, ${describeHostSpeed(host.end)} (see [../README.md](../README.md#the-hosts-speed)).`,
  ];
}

/** Says how many rounds of the cells the targets read the run measured, when more than one. */
function repeated(results: RunResults): string {
  const s = results.settings;
  const rounds = s.targetRounds ?? 1;
  const pairs =
    s.pairTimeMs === undefined
      ? ''
      : `: each memory cell paired with each reference, the two run at once on one core (${s.pairTimeMs} ms after ${s.pairWarmupMs} ms warm-up) and read in decisions per CPU-second; each Redis cell between its references`;
  if (pairs === '')
    return rounds > 1
      ? `, then ${rounds} rounds of the cells the targets read, each sluice cell between its references (medians)`
      : '';
  return `, then ${rounds === 1 ? 'one round' : `${rounds} rounds`} of the cells the targets read${pairs}${rounds > 1 ? ' (medians)' : ''}`;
}

/** How the Redis ceiling's runs were taken, for a run that records it. */
const redisRounds = (s: Record<string, number>): string =>
  s.redisBenchRepeats === undefined
    ? ''
    : s.redisBenchRepeats === 1
      ? ` Redis ceiling one run of ${s.redisBenchSeconds} s per case and depth;`
      : ` Redis ceiling ${s.redisBenchRepeats} rounds of runs of ${s.redisBenchSeconds} s per case and depth, medians;`;

/** How the HTTP targets' pairs were taken, for a run that made them. */
const httpPairs = (s: Record<string, number>, cycles: number): string =>
  s.httpPairRunS === undefined
    ? ''
    : ` then, in each of ${cycles} cycles, the two sides of each target loaded at once on one core${s.httpPairWarmupS === 0 ? '' : `, once unmeasured${s.httpPairWarmupS === undefined ? '' : ` for ${s.httpPairWarmupS} s`} and then`} for ${s.httpPairRunS} s both ways round (each side started first once), the targets reading the geometric mean of the two quotients of requests per server CPU-second;`;

export function renderMarkdown(results: RunResults, http: readonly HttpRow[], checks: readonly TargetCheck[]): string {
  const m = results.machine;
  const s = results.settings;
  const cycles = Math.max(0, ...results.http.map((r) => r.round));
  const tableCycles = Math.max(0, ...results.http.filter((r) => r.pair === undefined).map((r) => r.round));
  return [
    '# sluice benchmark results',
    '',
    `Run of ${results.startedAt.slice(0, 16).replace('T', ' ')} UTC${results.quick ? ' (**--quick**: fewer cells, shorter runs; indicative only)' : ''}, ${Math.round(results.seconds)} s. ${m.cpus} × ${m.cpuModel}, Linux ${m.kernel}, Node ${m.node}, Redis ${m.redis}. Method and how to read the ratios: [../README.md](../README.md). Chart: [latest.svg](latest.svg).`,
    ...hostSpeed(results),
    '',
    `Settings: in-process cells ${s.inprocTimeMs} ms after ${s.inprocWarmupMs} ms warm-up, one fresh process each${repeated(results)}; HTTP ${tableCycles} cycles of runs of ${s.httpRunS} s (every server warmed up ${s.httpWarmupS} s first), bare between every two contenders, 50 connections, ratios to the neighbouring bare runs, medians over cycles;${httpPairs(s, cycles)}${redisRounds(s)} memory at ${int(s.heapKeys)} keys.`,
    '',
    '## Targets',
    '',
    targetsTable(checks),
    '',
    '## HTTP: pass path (every request allowed)',
    '',
    httpTable(http, 'pass'),
    '',
    '## HTTP: 429 path (every request after the first refused)',
    '',
    httpTable(http, 'deny'),
    '',
    '## Physical ceiling',
    '',
    ceilingSection(results, http),
    '',
    '## In-process decisions per second: memory store',
    '',
    inprocTable(results, 'memory', 'express-rate-limit:memory', 0),
    '',
    '## In-process decisions per second: Redis store',
    '',
    inprocTable(results, 'redis', 'rate-limiter-flexible:redis', 1),
    '',
    '## Three policies in one decision',
    '',
    policyTable(results),
    '',
    '## Decision service (`sluice serve`, one core, one gRPC channel)',
    '',
    serviceSection(results),
    '',
    '## Memory per tracked key (1M distinct keys, after forced GC)',
    '',
    heapTable(results),
    '',
    '## Notes',
    '',
    ...notes(results, http),
    '',
  ].join('\n');
}
