import { parseArgs } from '../lib/args.js';
import { reportAndExit } from '../lib/child-main.js';
import { buildKeys } from '../lib/keys.js';
import { quantileSorted } from '../lib/stats.js';
import { type Contender, type Mode, Unavailable } from './contender.js';
import { contenderFor } from './contenders.js';
import { concurrent, eachOnce, latencies, sequential } from './loops.js';

/**
 * One in-process cell in a fresh process: one contender, one key set, one concurrency, one
 * path. Prints one JSON line. Run by `run.ts`, pinned to the measured core.
 */
export interface CellResult {
  opsPerSec?: number;
  /** Decisions per second of this process's CPU time (all its threads): what a pair's ratio reads. */
  opsPerCpuSec?: number;
  p50Us?: number;
  p99Us?: number;
  /** Decisions sampled before timing whose outcome was not the expected one. */
  unexpected?: number;
  unavailable?: string;
}

const args = parseArgs(process.argv.slice(2));
const id = args.get('contender') as string;
const keyCount = Number(args.get('keys') ?? 100_000);
const workers = Number(args.get('concurrency') ?? 1);
const mode = (args.get('mode') ?? 'pass') as Mode;
const timeMs = Number(args.get('time') ?? 1000);
const warmupMs = Number(args.get('warmup') ?? 300);
const redisPort = args.has('redis-port') ? Number(args.get('redis-port')) : undefined;
// A pair's partner is still running: latencies measured now would be a shared core's, and no table reads them.
const measureLatency = workers === 1 && !args.has('paired');

async function settle(contender: Contender, key: string): Promise<boolean | undefined> {
  try {
    return contender.allowed(await contender.call(key), false);
  } catch (error) {
    return contender.allowed(error, true);
  }
}

async function main(): Promise<CellResult> {
  let contender: Contender;
  try {
    contender = await contenderFor(id)({ mode, redisPort, maxKeys: 100_000 });
  } catch (error) {
    if (error instanceof Unavailable) return { unavailable: error.message };
    throw error;
  }
  const keys = buildKeys(keyCount);
  // Deny runs first spend each key's single allowed request, 100 at a time.
  if (mode === 'deny') await eachOnce(contender.call, keys, 100, 60_000);
  let unexpected = 0;
  for (let i = 0; i < Math.min(1000, keys.length * 2); i++) {
    if ((await settle(contender, keys[i % keys.length] as string)) !== (mode === 'pass')) unexpected++;
  }
  const run = (ms: number) =>
    workers === 1 ? sequential(contender.call, keys, ms) : concurrent(contender.call, keys, ms, workers);
  await run(warmupMs);
  const cpuBefore = process.cpuUsage();
  const { ops, seconds } = await run(timeMs);
  const cpu = process.cpuUsage(cpuBefore);
  const result: CellResult = {
    opsPerSec: ops / seconds,
    opsPerCpuSec: ops / ((cpu.user + cpu.system) / 1e6),
    unexpected,
  };
  if (measureLatency) {
    const sorted = await latencies(contender.call, keys, 50_000, Math.min(500, timeMs));
    result.p50Us = quantileSorted(sorted, 0.5);
    result.p99Us = quantileSorted(sorted, 0.99);
  }
  await contender.close();
  return result;
}

reportAndExit(main());
