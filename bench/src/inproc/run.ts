import type { ChildProcess } from 'node:child_process';
import { finish, lastJson, spawnNode } from '../lib/children.js';
import { startCpuMeter } from '../lib/cpu.js';
import { rate } from '../lib/format.js';
import { measured } from '../lib/job.js';
import type { Progress } from '../lib/progress.js';
import type { BenchRedis } from '../lib/redis-server.js';
import type { InprocResult } from '../results.js';
import type { Cell } from './plan.js';
import type { CellResult } from './worker.js';

export interface InprocSettings {
  /** Longest wait for a quiet machine before each job. */
  quietWaitMs: number;
  timeMs: number;
  warmupMs: number;
  /** Each cell of a pair gets about half the core: its runs are longer, so that each still has about `timeMs` of it. */
  pairTimeMs: number;
  pairWarmupMs: number;
}

/** The measured core: the Redis server and load generators live on the other one. */
const CPU = 0;

type Measured = CellResult & { error?: string; redisCores?: number };

const labelOf = (cell: Cell) =>
  `inproc ${cell.contender} ${cell.keys === 1 ? 'hot' : cell.keys} c=${cell.concurrency} ${cell.mode}${cell.pair === undefined ? '' : ' (pair)'}`;

/**
 * Runs each cell in a fresh process pinned to core 0, with Redis flushed before each Redis
 * cell; the two cells of a pair in two processes at once on that core.
 */
export async function runInproc(
  cells: readonly Cell[],
  settings: InprocSettings,
  redis: BenchRedis,
  progress: Progress,
): Promise<InprocResult[]> {
  const planned = 0.6 + (settings.timeMs + settings.warmupMs) / 1000;
  progress.plan(cells.length, planned);
  const results: InprocResult[] = [];
  for (let i = 0; i < cells.length; i++) {
    const cell = cells[i] as Cell;
    const partner = cell.pair === undefined ? undefined : cells[i + 1];
    if (partner !== undefined && partner.pair !== cell.pair) throw new Error(`pair ${cell.pair} has one cell`);
    const group = partner === undefined ? [cell] : [cell, partner];
    const timing =
      partner === undefined
        ? { timeMs: settings.timeMs, warmupMs: settings.warmupMs }
        : { timeMs: settings.pairTimeMs, warmupMs: settings.pairWarmupMs };
    const job = await measured(
      { redis: redis.pid },
      async () => {
        await redis.flush();
        const children = group.map((c) => spawnWorker(c, timing, redis.port));
        const pids = Object.fromEntries(children.map((child, n) => [`worker${n}`, child.pid]));
        const meter = startCpuMeter({ ...pids, redis: redis.pid });
        const done = await Promise.all(children.map((child) => finish(child, 120_000)));
        const { foreign, cores } = meter();
        const runs = done.map((d, n): Measured => {
          if (d.code !== 0) return { error: d.stderr.trim().split('\n').slice(-3).join(' ') };
          const r: Measured = lastJson<CellResult>(d.stdout);
          // Redis's share of a core over the worker's whole life: a lower bound on its load while measuring.
          if ((group[n] as Cell).store === 'redis') r.redisCores = cores.redis ?? 0;
          return r;
        });
        return { result: { runs }, foreign };
      },
      settings.quietWaitMs,
    );
    group.forEach((c, n) => {
      const { foreign, retried, waitedMs } = job;
      const result = { ...(job.runs[n] as Measured), foreign, retried, waitedMs };
      const shown =
        result.unavailable ?? result.error ?? `${rate(result.opsPerSec)}/s${result.unexpected ? ' (UNEXPECTED)' : ''}`;
      progress.done(labelOf(c), shown, planned);
      results.push({ ...c, ...result });
    });
    i += group.length - 1;
  }
  return results;
}

function spawnWorker(cell: Cell, timing: { timeMs: number; warmupMs: number }, redisPort: number): ChildProcess {
  return spawnNode(CPU, 'inproc/worker.ts', [
    '--contender',
    cell.contender,
    '--keys',
    String(cell.keys),
    '--concurrency',
    String(cell.concurrency),
    '--mode',
    cell.mode,
    '--time',
    String(timing.timeMs),
    '--warmup',
    String(timing.warmupMs),
    '--redis-port',
    String(redisPort),
    ...(cell.pair === undefined ? [] : ['--paired']),
  ]);
}
