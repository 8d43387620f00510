import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { finish, lastJson, packageFile, spawnNode, spawnPinned, stop } from '../lib/children.js';
import { startCpuMeter } from '../lib/cpu.js';
import { rate } from '../lib/format.js';
import type { Disturbance } from '../lib/job.js';
import { measured } from '../lib/job.js';
import type { Progress } from '../lib/progress.js';
import type { BenchRedis } from '../lib/redis-server.js';
import type { ServiceClientCost, ServiceResult } from '../results.js';

export interface ServiceSettings {
  quietWaitMs: number;
  warmupMs: number;
  durationMs: number;
  /** Calls kept in flight, one cell each: 1, 10 and 100 in the full run; the 100 the targets read in the quick one. */
  inFlight: readonly number[];
  /** Whether to measure what the Node client adds beside an in-process Redis store (a table, no target). */
  clientCost: boolean;
}

/**
 * The service runs alone on core 0; load generators and Redis share core 1, so what the
 * generator costs never lands on the service's core (`taskset`).
 */
const SERVICE_CPU = 0;
const LOAD_CPU = 1;
/** `control` answers OK without deciding: what gRPC and the generator alone cost. */
const SERVERS = ['control', 'memory', 'redis'] as const;
const bin = join(dirname(createRequire(import.meta.url).resolve('@sluice/server/package.json')), 'bin', 'sluice.js');

/** Starts one server under test pinned to its core; resolves with its gRPC port. */
async function startServer(
  kind: ServiceResult['store'],
  redis: BenchRedis,
): Promise<{ child: ChildProcess; port: number }> {
  const child =
    kind === 'control' ? spawnNode(SERVICE_CPU, 'service/control-server.ts', []) : startService(kind, redis);
  const port = await new Promise<number>((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => reject(new Error(`${kind} server did not start: ${text}`)), 15_000);
    child.stderr?.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      const match = /"msg":"listening","grpcPort":(\d+)/.exec(text);
      if (match !== null) {
        clearTimeout(timer);
        resolve(Number(match[1]));
      }
    });
    child.once('exit', (code) => reject(new Error(`${kind} server exited with ${code}: ${text}`)));
  });
  return { child, port };
}

/** `sluice serve` from its built bin. */
function startService(store: 'memory' | 'redis', redis: BenchRedis): ChildProcess {
  const args = ['serve', '--rules', packageFile('src/service/rules'), '--host', '127.0.0.1', '--grpc-port', '0'];
  // A store timeout well above the default 100 ms: on a loaded machine a slow call must count
  // as slow, not fail and skew the rate.
  args.push('--store-timeout-ms', '2000', '--http-port', '0');
  if (store === 'redis') args.push('--redis', `redis://127.0.0.1:${redis.port}`);
  return spawnPinned(SERVICE_CPU, process.execPath, [bin, ...args]);
}

const rssMb = (pid: number | undefined): number | undefined => {
  const line = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return line === null ? undefined : Number(line[1]) / 1024;
};

async function runLoad(args: string[], seconds: number, pids: Record<string, number | undefined>) {
  const child = spawnNode(LOAD_CPU, args[0] as string, args.slice(1));
  const meter = startCpuMeter({ load: child.pid, ...pids });
  const done = await finish(child, 60_000 + seconds * 4000);
  const { foreign, cores } = meter();
  if (done.code !== 0) throw new Error(done.stderr.trim().split('\n').slice(-3).join(' '));
  return { output: done.stdout, foreign, cores };
}

/**
 * Decisions per second of one `sluice serve` process on one core, over one gRPC channel at
 * each number of calls in flight the settings give, with the memory store and with Redis,
 * beside a control server that answers without deciding; then what the Node client adds per
 * decision and per Fastify request next to an in-process Redis store.
 */
export async function runService(
  settings: ServiceSettings,
  redis: BenchRedis,
  progress: Progress,
): Promise<{ service: ServiceResult[]; clientCost: ServiceClientCost | undefined }> {
  const seconds = (settings.warmupMs + settings.durationMs) / 1000;
  const timing = ['--warmup-ms', String(settings.warmupMs), '--ms', String(settings.durationMs)];
  progress.plan(settings.inFlight.length * SERVERS.length + (settings.clientCost ? 1 : 0), seconds + 1);
  const service: ServiceResult[] = [];
  let clientCost: ServiceClientCost | undefined;
  for (const store of SERVERS) {
    await redis.flush();
    const { child, port } = await startServer(store, redis);
    const own = { service: child.pid, redis: redis.pid };
    try {
      for (const inFlight of settings.inFlight) {
        const load = ['service/load.ts', '--address', `127.0.0.1:${port}`, '--inflight', String(inFlight)];
        const result = await measured(
          own,
          async (): Promise<{
            result: Omit<ServiceResult, keyof Disturbance | 'store' | 'inFlight'>;
            foreign: number;
          }> => {
            try {
              const { output, foreign, cores } = await runLoad([...load, ...timing], seconds, own);
              const figures = lastJson<{ callsPerSec: number; p50Us: number; p99Us: number; failed: number }>(output);
              return { result: { ...figures, serviceCores: cores.service ?? 0 }, foreign };
            } catch (error) {
              return { result: { error: (error as Error).message }, foreign: 0 };
            }
          },
          settings.quietWaitMs,
        );
        const row: ServiceResult = { store, inFlight, ...result, rssMb: rssMb(child.pid) };
        service.push(row);
        progress.done(`service ${store} ${inFlight} in flight`, row.error ?? `${rate(row.callsPerSec)}/s`, seconds + 1);
      }
      if (store === 'redis' && settings.clientCost) {
        const args = ['service/client-cost.ts', '--address', `127.0.0.1:${port}`, '--redis-port', String(redis.port)];
        const label = 'service client vs Redis store';
        try {
          const { output } = await runLoad([...args, ...timing], seconds * 8, own);
          clientCost = lastJson<ServiceClientCost>(output);
          const added = clientCost.service.sequentialP50Us - clientCost.redis.sequentialP50Us;
          progress.done(label, `+${Math.round(added)} µs per decision`, seconds + 1);
        } catch (error) {
          progress.done(label, `error: ${(error as Error).message}`, seconds + 1);
        }
      }
    } finally {
      await stop(child);
    }
  }
  return { service, clientCost };
}
