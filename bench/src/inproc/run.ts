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
}

/** The measured core: the Redis server and load generators live on the other one. */
const CPU = 0;

/** Runs each cell in a fresh process pinned to core 0, with Redis flushed before each Redis cell. */
export async function runInproc(
  cells: readonly Cell[],
  settings: InprocSettings,
  redis: BenchRedis,
  progress: Progress,
): Promise<InprocResult[]> {
  const planned = 0.6 + (settings.timeMs + settings.warmupMs) / 1000;
  progress.plan(cells.length, planned);
  const results: InprocResult[] = [];
  for (const cell of cells) {
    const label = `inproc ${cell.contender} ${cell.keys === 1 ? 'hot' : cell.keys} c=${cell.concurrency} ${cell.mode}`;
    const result = await measured(
      { redis: redis.pid },
      async (): Promise<{ result: CellResult & { error?: string; redisCores?: number }; foreign: number }> => {
        await redis.flush();
        const child = spawnNode(CPU, 'inproc/worker.ts', [
          '--contender',
          cell.contender,
          '--keys',
          String(cell.keys),
          '--concurrency',
          String(cell.concurrency),
          '--mode',
          cell.mode,
          '--time',
          String(settings.timeMs),
          '--warmup',
          String(settings.warmupMs),
          '--redis-port',
          String(redis.port),
        ]);
        const meter = startCpuMeter({ worker: child.pid, redis: redis.pid });
        const done = await finish(child, 120_000);
        const { foreign, cores } = meter();
        if (done.code !== 0) return { result: { error: done.stderr.trim().split('\n').slice(-3).join(' ') }, foreign };
        const result: CellResult & { redisCores?: number } = lastJson<CellResult>(done.stdout);
        // Redis's share of a core over the worker's whole life: a lower bound on its load while measuring.
        if (cell.store === 'redis') result.redisCores = cores.redis ?? 0;
        return { result, foreign };
      },
      settings.quietWaitMs,
    );
    const shown =
      result.unavailable ?? result.error ?? `${rate(result.opsPerSec)}/s${result.unexpected ? ' (UNEXPECTED)' : ''}`;
    progress.done(label, shown, planned);
    results.push({ ...cell, ...result });
  }
  return results;
}
