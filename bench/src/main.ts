import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, release } from 'node:os';
import { FLOOR_LABELS, replayCases } from './ceiling/floor.js';
import { type RedisBenchCase, runRedisBenchmark } from './ceiling/redis-benchmark.js';
import { type CapturedScript, captureScript } from './ceiling/scripts.js';
import { runHeap } from './heap/run.js';
import { runHttp } from './http/run.js';
import { fullPlan, quickPlan, watchPlan } from './inproc/plan.js';
import { runInproc } from './inproc/run.js';
import { killAll, packageFile } from './lib/children.js';
import { describeHostSpeed, measureHostSpeed } from './lib/host-speed.js';
import { createProgress } from './lib/progress.js';
import { type BenchRedis, startRedis } from './lib/redis-server.js';
import { readOptions, SECTIONS } from './options.js';
import { writeReport } from './report/write.js';
import type { RedisBenchResult, RunResults } from './results.js';
import { runService } from './service/run.js';

const options = readOptions(process.argv.slice(2));
const resultsDir = packageFile('results');

const quick = options.quick;
/**
 * The rounds of the cells the targets read, each sluice cell beside its references, after the
 * full run's matrix (the quick run has one round and no matrix): a target's ratio is the median
 * of one quotient per round. Nine: a memory pair's quotient ranged over some 0.1 within a run
 * (gcra ÷ the lru-cache floor 0.838–0.934 on 2026-12-02), more than a target's margin, and the
 * median of five moved between runs by as much (0.877 to 0.961 over twelve runs).
 */
const TARGET_ROUNDS = quick ? 1 : 9;
/** The watch section's rounds: each the unwatched cell paired with each watched one. */
const WATCH_ROUNDS = 5;
const WATCH_ROUNDS_QUICK = 1;
/** The Redis ceiling's pipeline depths: the quick run keeps the 16 the targets read. */
const REDIS_DEPTHS = quick ? [16] : [1, 16];
const settings = {
  targetRounds: TARGET_ROUNDS,
  inprocTimeMs: quick ? 250 : 800,
  inprocWarmupMs: quick ? 100 : 300,
  // A pair's two processes share the core: about half of each run is each one's.
  pairTimeMs: quick ? 500 : 1600,
  pairWarmupMs: quick ? 300 : 1500,
  heapKeys: 1_000_000,
  httpCycles: options.cycles,
  httpTableCycles: quick ? 1 : options.cycles,
  httpWarmupS: quick ? 0.4 : 2,
  httpRunS: quick ? 0.15 : 0.5,
  httpPairRunS: quick ? 0.15 : 0.75,
  // Long enough to wake a server that idled (see `runFramework`); the quick run's cycles leave none idle long (see `HttpSettings`).
  httpPairWarmupS: quick ? 0 : 0.75,
  quietWaitMs: quick ? 2000 : 5000,
  redisBenchSeconds: quick ? 0.3 : 2,
  redisBenchRepeats: quick ? 1 : 5,
  serviceWarmupMs: quick ? 300 : 1000,
  serviceDurationMs: quick ? 500 : 3000,
};

const heapContenders = quick
  ? ['sluice:memory:gcra', 'sluice:memory:sliding-window-counter']
  : ['gcra', 'sliding-window-counter', 'token-bucket', 'leaky-bucket', 'fixed-window', 'sliding-window-log'].map(
      (a) => `sluice:memory:${a}`,
    );
// The quick run keeps the lightest peer, which the targets name; the full run has all four.
const heapPeers = ['@fastify/rate-limit:memory'].concat(
  quick ? [] : ['express-rate-limit:memory', 'koa-ratelimit:memory', 'rate-limiter-flexible:memory'],
);

async function redisCases(redis: BenchRedis): Promise<{ cases: RedisBenchCase[]; missing: RedisBenchResult[] }> {
  const captured: CapturedScript[] = [];
  const missing: RedisBenchResult[] = [];
  const wanted: Array<[Parameters<typeof captureScript>[1], 1 | 3, (1 | 32)?]> = quick
    ? [
        ['gcra', 1],
        ['sliding-window-counter', 1],
        ['sliding-window-counter', 3],
      ]
    : [
        ...(
          [
            'gcra',
            'sliding-window-counter',
            'token-bucket',
            'leaky-bucket',
            'fixed-window',
            'sliding-window-log',
          ] as const
        ).map((a) => [a, 1] as [typeof a, 1]),
        ['gcra', 3],
        ['sliding-window-counter', 3],
        ['gcra', 1, 32],
        ['sliding-window-counter', 1, 32],
        ['gcra', 3, 32],
      ];
  for (const [algorithm, count, decisions] of wanted) {
    try {
      captured.push(await captureScript(redis.port, algorithm, count, decisions));
    } catch (error) {
      const label = `sluice ${algorithm}${count === 3 ? ', 3 policies' : ''}${decisions ? `, ${decisions} decisions per call` : ''}`;
      missing.push(...unavailable(label, decisions ?? 1, (error as Error).message));
    }
  }
  const { cases, floors } = replayCases(captured);
  if (!floors) {
    for (const label of FLOOR_LABELS)
      missing.push(...unavailable(label, 1, 'the one-policy gcra or counter call was not captured'));
  }
  return { cases, missing };
}

/** The report's rows, at each depth the run measures, for a case that could not run. */
const unavailable = (command: string, decisions: number, reason: string): RedisBenchResult[] =>
  REDIS_DEPTHS.map((pipeline) => ({
    command,
    pipeline,
    decisions,
    unavailable: reason,
    foreign: 0,
    retried: false,
    waitedMs: 0,
  }));

function machine(): RunResults['machine'] {
  const redisVersion = execFileSync('redis-server', ['--version'], { encoding: 'utf8' }).match(/v=(\S+)/)?.[1] ?? '?';
  return {
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model ?? '?',
    node: process.version,
    redis: redisVersion,
    kernel: release(),
  };
}

const inprocSettings = {
  timeMs: settings.inprocTimeMs,
  warmupMs: settings.inprocWarmupMs,
  pairTimeMs: settings.pairTimeMs,
  pairWarmupMs: settings.pairWarmupMs,
  quietWaitMs: settings.quietWaitMs,
};

async function measure(): Promise<RunResults> {
  const progress = createProgress();
  const startedAt = new Date();
  const results: RunResults = {
    startedAt: startedAt.toISOString(),
    seconds: 0,
    quick,
    sections: options.sections,
    machine: machine(),
    settings,
    inproc: [],
    heap: [],
    http: [],
    redisBench: [],
  };
  const hostAtStart = await measureHostSpeed();
  progress.note(`host: ${describeHostSpeed(hostAtStart)}`);
  const redis = await startRedis(1);
  progress.note(`redis-server ${results.machine.redis} on 127.0.0.1:${redis.port}, pinned to cpu 1`);
  try {
    const run = (section: string) => options.sections.includes(section as never);
    if (run('inproc')) {
      const plan = quick ? quickPlan() : fullPlan(TARGET_ROUNDS);
      results.inproc = await runInproc(plan, inprocSettings, redis, progress);
    }
    if (run('watch')) {
      const rounds = quick ? WATCH_ROUNDS_QUICK : WATCH_ROUNDS;
      results.inproc.push(...(await runInproc(watchPlan(rounds), inprocSettings, redis, progress)));
    }
    if (run('heap')) results.heap = await runHeap([...heapContenders, ...heapPeers], settings.heapKeys, progress);
    if (run('redis')) {
      const { cases, missing } = await redisCases(redis);
      const bench = {
        seconds: settings.redisBenchSeconds,
        repeats: settings.redisBenchRepeats,
        depths: REDIS_DEPTHS,
        quietWaitMs: settings.quietWaitMs,
      };
      results.redisBench = [...(await runRedisBenchmark(cases, bench, redis, progress)), ...missing];
    }
    if (run('http')) {
      const http = {
        cycles: settings.httpCycles,
        tableCycles: settings.httpTableCycles,
        warmupS: settings.httpWarmupS,
        runS: settings.httpRunS,
        pairRunS: settings.httpPairRunS,
        pairWarmupS: settings.httpPairWarmupS,
        quietWaitMs: settings.quietWaitMs,
        quick,
      };
      results.http = await runHttp(http, redis, progress);
    }
    if (run('service')) {
      const service = {
        warmupMs: settings.serviceWarmupMs,
        durationMs: settings.serviceDurationMs,
        quietWaitMs: settings.quietWaitMs,
        inFlight: quick ? [100] : [1, 10, 100],
        clientCost: !quick,
      };
      const measuredService = await runService(service, redis, progress);
      results.service = measuredService.service;
      results.serviceClientCost = measuredService.clientCost;
    }
  } finally {
    await redis.stop();
  }
  results.host = { start: hostAtStart, end: await measureHostSpeed() };
  progress.note(`host: ${describeHostSpeed(results.host.end)}`);
  results.seconds = (Date.now() - startedAt.getTime()) / 1000;
  progress.note(`measured in ${Math.round(results.seconds)} s`);
  return results;
}

async function main() {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      killAll();
      process.exit(130);
    });
  }
  process.once('exit', killAll);
  mkdirSync(`${resultsDir}/raw`, { recursive: true });
  const results = options.report ? (JSON.parse(readFileSync(options.report, 'utf8')) as RunResults) : await measure();
  const stamp = results.startedAt.replaceAll(':', '-').slice(0, 19);
  if (!options.report) writeFileSync(`${resultsDir}/raw/${stamp}.json`, `${JSON.stringify(results, null, 2)}\n`);
  // Runs from before the sections were recorded were re-reported only when complete.
  const sections = results.sections ?? SECTIONS;
  const complete = !results.quick && sections.length === SECTIONS.length;
  // A quick or partial run never replaces the committed report, re-reported or not: it lands
  // next to its raw data.
  const base = complete ? `${resultsDir}/latest` : `${resultsDir}/raw/${stamp}`;
  writeReport(results, base);
  process.stderr.write(
    `wrote ${base}.md and ${base}.svg${options.report ? '' : `, raw data in results/raw/${stamp}.json`}\n`,
  );
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  killAll();
  process.exit(1);
});
