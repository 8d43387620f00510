import { Redis } from 'ioredis';
import { finish, spawnPinned } from '../lib/children.js';
import { startCpuMeter } from '../lib/cpu.js';
import { rate } from '../lib/format.js';
import { type Disturbance, measured } from '../lib/job.js';
import type { Progress } from '../lib/progress.js';
import type { BenchRedis } from '../lib/redis-server.js';
import { median } from '../lib/stats.js';
import type { RedisBenchResult } from '../results.js';
import type { CapturedScript } from './scripts.js';

export interface RedisBenchCase {
  label: string;
  /** Command and arguments as redis-benchmark takes them. */
  command: string[];
  /** The script the command runs, loaded before it: its source, SHA and decisions per call. */
  script?: Pick<CapturedScript, 'lua' | 'sha' | 'decisions'>;
}

export interface RedisBenchSettings {
  /** Longest wait for a quiet machine before each job. */
  quietWaitMs: number;
  seconds: number;
  repeats: number;
  /** Pipeline depths each case runs at: 1 and 16 in the full run, the 16 the targets read in the quick one. */
  depths: readonly number[];
}

interface Row {
  opsPerSec: number;
  p50Ms: number;
  p99Ms: number;
}

/**
 * Redis's own time per call of a command since the last `CONFIG RESETSTAT`, from
 * `INFO commandstats`: time spent inside Redis, which the machine's load changes little.
 */
export async function usecPerCall(admin: Redis, command: string): Promise<number> {
  const name = command.toLowerCase();
  const line = (await admin.info('commandstats')).split('\n').find((l) => l.startsWith(`cmdstat_${name}:`));
  const usec = Number(/usec_per_call=([\d.]+)/.exec(line ?? '')?.[1]);
  if (!(usec > 0)) throw new Error(`no commandstats for ${command}`);
  return usec;
}

/** Client keys the replays draw from (redis-benchmark's `-r`). */
const KEYS = 100_000;

/** One redis-benchmark run on core 0 (nothing else runs there meanwhile); Redis is on core 1. */
async function once(redis: BenchRedis, command: string[], pipeline: number, requests: number) {
  const child = spawnPinned(0, 'redis-benchmark', [
    ...['-h', '127.0.0.1', '-p', String(redis.port), '-c', '50', '-n', String(requests)],
    ...['-P', String(pipeline), '-r', String(KEYS), '--csv', ...command],
  ]);
  const meter = startCpuMeter({ benchmark: child.pid, redis: redis.pid });
  const done = await finish(child, 60_000);
  const cpu = meter();
  if (done.code !== 0) throw new Error(done.stderr.trim() || `redis-benchmark exited with ${done.code}`);
  const row = done.stdout.trim().split('\n').at(-1)?.split('","') ?? [];
  const numbers = row.map((cell) => Number(cell.replaceAll('"', '')));
  // CSV columns: test, rps, avg, min, p50, p95, p99, max (latencies in ms).
  const result: Row = { opsPerSec: numbers[1] ?? 0, p50Ms: numbers[4] ?? 0, p99Ms: numbers[6] ?? 0 };
  if (!(result.opsPerSec > 0)) throw new Error(`unreadable redis-benchmark output: ${done.stdout.slice(0, 200)}`);
  return { result: { ...result, redisCores: cpu.cores.redis ?? 0 }, foreign: cpu.foreign };
}

/** Shortest probe that sizes a measured run well; a probe of a fixed count took 15 s on a slow script. */
const PROBE_SECONDS = 0.2;

/**
 * Calls per second, from short probes that size the measured run to about its `seconds`: a
 * first one of a few thousand calls, and a longer one when that was over too soon to go by.
 */
async function callsPerSec(redis: BenchRedis, command: string[], pipeline: number): Promise<number> {
  let requests = 2_000;
  for (;;) {
    const { opsPerSec } = (await once(redis, command, pipeline, requests)).result;
    const seconds = requests / opsPerSec;
    if (seconds >= PROBE_SECONDS / 2 || requests >= 1_000_000) return opsPerSec;
    requests = Math.min(1_000_000, Math.ceil((requests * PROBE_SECONDS) / seconds));
  }
}

type Run = Row & Disturbance & { redisCores: number; usecPerCall: number };

/**
 * The physical ceiling of Redis on this machine: each command unpipelined and 16-deep
 * pipelined (16-deep only in the quick run), 50 clients, 100k random keys. Scripts are loaded
 * with SCRIPT LOAD from the captured source first, and the load must return the SHA the store
 * itself uses.
 *
 * The repeats run in rounds, each round every case once, so that a drift of the machine's
 * speed during the section falls alike on every case: the floors and sluice's scripts are read
 * against each other. Each run starts from an empty Redis, so every round replays a case in
 * the same state (see `measuredRun` for its warm-up).
 */
export async function runRedisBenchmark(
  cases: readonly RedisBenchCase[],
  settings: RedisBenchSettings,
  redis: BenchRedis,
  progress: Progress,
): Promise<RedisBenchResult[]> {
  // The run, and the warm-up of a one-decision call (about a second) or the probes that size a batch's.
  const planned = settings.seconds + 1.6;
  progress.plan(cases.length * settings.depths.length * settings.repeats, planned);
  const admin = new Redis({ port: redis.port, host: '127.0.0.1' });
  const cells = cases.flatMap((benchCase) =>
    settings.depths.map((pipeline) => ({ benchCase, pipeline, runs: [] as Run[] })),
  );
  try {
    for (let round = 1; round <= settings.repeats; round++) {
      for (const { benchCase, pipeline, runs } of cells) {
        const run = await measuredRun(admin, redis, benchCase, pipeline, settings);
        runs.push(run);
        const label = `redis-benchmark ${benchCase.label} -P ${pipeline}`;
        progress.done(
          settings.repeats > 1 ? `${label} (${round}/${settings.repeats})` : label,
          `${rate(run.opsPerSec)}/s`,
          planned,
        );
      }
    }
  } finally {
    admin.disconnect();
  }
  return cells.map(({ benchCase, pipeline, runs }) => {
    const pick = (f: (r: Run) => number) => median(runs.map(f));
    return {
      command: benchCase.label,
      pipeline,
      decisions: benchCase.script?.decisions ?? 1,
      opsPerSec: pick((r) => r.opsPerSec),
      p50Ms: pick((r) => r.p50Ms),
      p99Ms: pick((r) => r.p99Ms),
      redisCores: pick((r) => r.redisCores),
      usecPerCall: pick((r) => r.usecPerCall),
      usecPerCallRuns: runs.map((r) => r.usecPerCall),
      foreign: Math.max(...runs.map((r) => r.foreign)),
      retried: runs.some((r) => r.retried),
      waitedMs: runs.reduce((sum, r) => sum + r.waitedMs, 0),
    };
  });
}

/** One measured run of a case, on an empty Redis with its script loaded, sized to about `seconds`. */
async function measuredRun(
  admin: Redis,
  redis: BenchRedis,
  benchCase: RedisBenchCase,
  pipeline: number,
  settings: RedisBenchSettings,
): Promise<Run> {
  await redis.flush();
  if (benchCase.script !== undefined) {
    const sha = await admin.script('LOAD', benchCase.script.lua);
    if (sha !== benchCase.script.sha)
      throw new Error(`SCRIPT LOAD gave ${sha}, the store uses ${benchCase.script.sha}`);
  }
  // A one-decision call replays every client key once on average before the measure, so that
  // a state that outlives its call (the sliding window counter's) is mostly there to be read,
  // as in a long replay. A batch draws each of its keys apart (redis-benchmark gives every
  // placeholder its own number), from 32 times as many keys, so its states rarely meet again
  // in any run of this length, warmed or not. The warm-up's own rate sizes the measured run.
  const warmUp =
    (benchCase.script?.decisions ?? 1) === 1 ? await once(redis, benchCase.command, pipeline, KEYS) : undefined;
  const callRate = warmUp?.result.opsPerSec ?? (await callsPerSec(redis, benchCase.command, pipeline));
  const requests = Math.max(10_000, Math.round(callRate * settings.seconds));
  return measured(
    { redis: redis.pid },
    async () => {
      await admin.config('RESETSTAT');
      const ran = await once(redis, benchCase.command, pipeline, requests);
      const usec = await usecPerCall(admin, benchCase.command[0] as string);
      return { ...ran, result: { ...ran.result, usecPerCall: usec } };
    },
    settings.quietWaitMs,
  );
}
