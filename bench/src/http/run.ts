import type { ChildProcess } from 'node:child_process';
import { get } from 'node:http';
import { finish, lastJson, spawnNode, stop, waitForLine } from '../lib/children.js';
import { startCpuMeter } from '../lib/cpu.js';
import { rate } from '../lib/format.js';
import { measured } from '../lib/job.js';
import type { Progress } from '../lib/progress.js';
import type { BenchRedis } from '../lib/redis-server.js';
import type { HttpResult } from '../results.js';
import { frameworks, type HttpJob, jobsFor, rotate } from './plan.js';

export interface HttpSettings {
  /** Longest wait for a quiet machine before each job. */
  quietWaitMs: number;
  rounds: number;
  warmupS: number;
  durationS: number;
  quick: boolean;
}

const SERVER_CPU = 0;
const CLIENT_CPU = 1;
const PORT = 3917;

type Measured = Omit<HttpResult, 'round' | 'framework' | 'variant' | 'mode' | 'foreign' | 'retried' | 'waitedMs'>;

const status = (port: number) =>
  new Promise<number>((resolve, reject) => {
    const request = get({ host: '127.0.0.1', port, path: '/', agent: false }, (res) => {
      res.resume();
      res.once('end', () => resolve(res.statusCode ?? 0));
    });
    request.setTimeout(5000, () => request.destroy(new Error('probe timed out')));
    request.once('error', reject);
  });

/** One job: server on core 0, probe, then load from core 1; everything stopped before returning. */
async function runJob(
  job: HttpJob,
  settings: HttpSettings,
  redis: BenchRedis,
): Promise<{ result: Measured; foreign: number }> {
  // Every attempt starts from an empty Redis: a retried 429 job must find its key unspent.
  await redis.flush();
  const lifetime = String(Math.round((settings.warmupS + settings.durationS) * 1000 + 60_000));
  const server = spawnNode(SERVER_CPU, 'http/serve.ts', [
    ...['--framework', job.framework, '--variant', job.variant, '--mode', job.mode],
    ...['--port', String(PORT), '--redis-port', String(redis.port), '--lifetime', lifetime],
  ]);
  // The load generator starts alongside the server and waits for the probes before loading it.
  const client: ChildProcess = spawnNode(
    CLIENT_CPU,
    'http/load.ts',
    [
      ...['--port', String(PORT), '--connections', '50', '--expect', job.mode === 'pass' ? '200' : '429'],
      ...['--warmup', String(settings.warmupS), '--duration', String(settings.durationS), '--wait-go'],
    ],
    [],
    'pipe',
  );
  try {
    const line = await waitForLine(server, /^(ready|\{)/, 30_000);
    if (line.startsWith('{')) return { result: lastJson<Measured>(line), foreign: 0 };
    const probe = [await status(PORT), await status(PORT)];
    const wanted = job.mode === 'pass' ? [200, 200] : [200, 429];
    if (probe.join() !== wanted.join()) throw new Error(`probe answered ${probe.join()}, expected ${wanted.join()}`);
    client.stdin?.end('go\n');
    const done = finish(client, (settings.warmupS + settings.durationS) * 1000 + 30_000);
    await waitForLine(client, /^measuring/, (settings.warmupS + 10) * 1000);
    const meter = startCpuMeter({ server: server.pid, client: client.pid, redis: redis.pid });
    await waitForLine(client, /^measured/, (settings.durationS + 10) * 1000);
    const cpu = meter();
    const output = await done;
    if (output.code !== 0) throw new Error(output.stderr.trim().split('\n').slice(-2).join(' '));
    const result: Measured = {
      ...lastJson<Measured>(output.stdout),
      serverCores: cpu.cores.server ?? 0,
      clientCores: cpu.cores.client ?? 0,
    };
    if (job.variant.endsWith(':redis')) result.redisCores = cpu.cores.redis ?? 0;
    return { result, foreign: cpu.foreign };
  } finally {
    await stop(client);
    await stop(server);
  }
}

/**
 * Rounds of every framework's jobs back to back; the order of frameworks and of jobs within
 * each rotates from round to round. Ratios are taken later, within each round.
 */
export async function runHttp(settings: HttpSettings, redis: BenchRedis, progress: Progress): Promise<HttpResult[]> {
  const planned = 1.8 + settings.warmupS + settings.durationS;
  const perRound = frameworks.flatMap((f) => jobsFor(f, settings.quick));
  progress.plan(perRound.length * settings.rounds, planned);
  const unavailable = new Map<string, string>();
  const results: HttpResult[] = [];
  for (let round = 1; round <= settings.rounds; round++) {
    for (const framework of rotate(frameworks, round - 1)) {
      for (const job of rotate(jobsFor(framework, settings.quick), round - 1)) {
        const label = `http r${round} ${job.framework} ${job.variant} ${job.mode}`;
        const known = unavailable.get(`${job.framework} ${job.variant}`);
        if (known !== undefined) {
          results.push({ round, ...job, unavailable: known, foreign: 0, retried: false, waitedMs: 0 });
          progress.done(label, known, 0);
          continue;
        }
        const result = await measured(
          { redis: redis.pid },
          () =>
            runJob(job, settings, redis).catch((error: Error) => ({ result: { error: error.message }, foreign: 0 })),
          settings.quietWaitMs,
        );
        if (result.unavailable !== undefined) unavailable.set(`${job.framework} ${job.variant}`, result.unavailable);
        results.push({ round, ...job, ...result });
        const shown =
          result.unavailable ?? result.error ?? `${rate(result.rps)} req/s  p99 ${result.p99Ms?.toFixed(2)} ms`;
        progress.done(label, shown, planned);
      }
    }
  }
  return results;
}
