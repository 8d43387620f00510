import { type ChildProcess, execFile } from 'node:child_process';
import { get } from 'node:http';
import { promisify } from 'node:util';
import { spawnNode, stop, waitForLine } from '../lib/children.js';
import { FOREIGN_LIMIT, processCpuSeconds, startCpuMeter, waitForQuiet } from '../lib/cpu.js';
import { ratio } from '../lib/format.js';
import type { Progress } from '../lib/progress.js';
import type { BenchRedis } from '../lib/redis-server.js';
import { freePort } from '../lib/redis-server.js';
import { geometricMean } from '../lib/stats.js';
import type { HttpResult } from '../results.js';
import { FIXED_HEADERS, REDIS_ROUND_TRIP } from './apps/app.js';
import type { LoadCommand, LoadRun } from './load.js';
import {
  contendersFor,
  cycleSequence,
  frameworks,
  type HttpContender,
  isSluice,
  pairSequence,
  readAlone,
  SERVER_V8_FLAGS,
  targetPairs,
  usesRedis,
} from './plan.js';

export interface HttpSettings {
  /** Longest wait for a quiet machine before each cycle. */
  quietWaitMs: number;
  /** Cycles of a framework's target pairs. */
  cycles: number;
  /**
   * How many of the last cycles also run contenders alone, each between two runs of the bare
   * framework: every contender in each cycle of the full run, for the tables; in the quick
   * run's one, only those a target reads alone (`readAlone`), once the pairs before it have
   * warmed every server well past its short warm-up.
   */
  tableCycles: number;
  warmupS: number;
  /** One run's length. */
  runS: number;
  /**
   * One pair's length each way round (a cycle loads every pair once with each side started
   * first, after an unmeasured load of both): the two servers share the core, so each gets
   * about half of it.
   */
  pairRunS: number;
  /**
   * The length of a pair's unmeasured first load; 0 for none. The quick run has none: its cycles
   * follow each other within seconds, and with none its two orders' quotients agreed (geometric
   * mean of one order's over the other's 1.00 on Fastify and Koa over cycles 2 to 5).
   */
  pairWarmupS: number;
  quick: boolean;
}

const SERVER_CPU = 0;
const CLIENT_CPU = 1;
/** Servers start on both cores, a group at once, and move to their own once ready. */
const STARTING_CPUS = '0,1';
/** The bench Redis's databases (`--databases` in `startRedis`): one per server of a group. */
const REDIS_DATABASES = 32;
/** What one run costs beyond its length: autocannon's set-up and the CPU accounting. */
const RUN_OVERHEAD_S = 0.1;

interface Server {
  contender: HttpContender;
  port: number;
  child: ChildProcess;
  /** Why it is not measured, when it is not. */
  unavailable?: string;
  error?: string;
}

const label = (c: HttpContender) => `${c.variant} ${c.mode}`;

const status = (port: number) =>
  new Promise<number>((resolve, reject) => {
    const request = get({ host: '127.0.0.1', port, path: '/', agent: false }, (res) => {
      res.resume();
      res.once('end', () => resolve(res.statusCode ?? 0));
    });
    request.setTimeout(5000, () => request.destroy(new Error('probe timed out')));
    request.once('error', reject);
  });

/** Starts a server and checks it: two probes answer 200, 200 (pass) or 200, 429 (429 path). */
async function startServer(
  contender: HttpContender,
  framework: string,
  index: number,
  port: number,
  redis: BenchRedis,
  lifetimeMs: number,
): Promise<Server> {
  const child = spawnNode(
    STARTING_CPUS,
    'http/serve.ts',
    [
      ...['--framework', framework, '--variant', contender.variant, '--mode', contender.mode],
      ...['--port', String(port), '--redis-port', String(redis.port), '--redis-db', String(index)],
      ...['--lifetime', String(lifetimeMs)],
    ],
    SERVER_V8_FLAGS,
  );
  const server: Server = { contender, port, child };
  try {
    const line = await waitForLine(child, /^(ready|\{)/, 60_000);
    if (line.startsWith('{')) {
      server.unavailable = (JSON.parse(line) as { unavailable: string }).unavailable;
      return server;
    }
    // Every thread, V8's own included, from now on.
    await promisify(execFile)('taskset', ['--all-tasks', '--pid', '--cpu-list', String(SERVER_CPU), String(child.pid)]);
    const probe = [await status(port), await status(port)];
    const wanted = contender.mode === 'pass' ? [200, 200] : [200, 429];
    if (probe.join() !== wanted.join()) throw new Error(`probe answered ${probe.join()}, expected ${wanted.join()}`);
  } catch (error) {
    server.error = (error as Error).message;
  }
  return server;
}

/** A server as the load generator targets it: its port, and the status its path answers with. */
const expectedOf = (s: Server) => ({ port: s.port, expect: s.contender.mode === 'pass' ? 200 : 429 }) as const;

/** Sends the load generator one command and waits for its one-line answer: one run per target. */
function loadOnce(client: ChildProcess, command: LoadCommand): Promise<LoadRun[]> {
  const answer = waitForLine(client, /^\{.*\}$/, (command.seconds + 30) * 1000);
  client.stdin?.write(`${JSON.stringify(command)}\n`);
  return answer.then((line) => {
    const parsed = JSON.parse(line) as { runs: LoadRun[] } | { error: string };
    if ('error' in parsed) throw new Error(parsed.error);
    return parsed.runs;
  });
}

type Measured = Omit<HttpResult, 'round' | 'seq' | 'framework' | 'variant' | 'mode' | 'pair'>;

/**
 * One run against one server, or a pair's against two at once, the CPU of each server, of
 * Redis and of the load generator metered, and once more if foreign load shared the cores
 * (the less disturbed attempt is kept).
 */
async function measureRuns(
  group: readonly Server[],
  client: ChildProcess,
  pids: Record<string, number | undefined>,
  seconds: number,
): Promise<Measured[]> {
  const attempt = async (): Promise<Measured[]> => {
    const meter = startCpuMeter(pids);
    const cpuBefore = group.map((s) => processCpuSeconds(s.child.pid as number));
    const targets = group.map(expectedOf);
    const runs = await loadOnce(client, { seconds, targets });
    const cpuAfter = group.map((s) => processCpuSeconds(s.child.pid as number));
    const cpu = meter();
    return group.map((server, n) => {
      const run = runs[n] as LoadRun;
      // CPU seconds over the run's own length: the server is idle outside the run.
      const cores = (name: string) => ((cpu.cores[name] ?? 0) * cpu.seconds) / run.seconds;
      const [before, after] = [cpuBefore[n], cpuAfter[n]];
      const result: Measured = {
        rps: run.responses / run.seconds,
        p50Ms: run.p50Ms,
        p99Ms: run.p99Ms,
        expectedShare: run.expectedShare,
        errors: run.errors,
        serverCores: cores(`server${server.port}`),
        clientCores: cores('client'),
        foreign: cpu.foreign,
        retried: false,
        waitedMs: 0,
      };
      if (before !== undefined && after !== undefined && after > before) {
        result.rpsPerCpuSec = run.responses / (after - before);
      }
      if (usesRedis(server.contender.variant)) result.redisCores = cores('redis');
      return result;
    });
  };
  const first = await attempt();
  const foreign = (runs: Measured[]) => runs[0]?.foreign ?? 0;
  if (foreign(first) <= FOREIGN_LIMIT) return first;
  const second = await attempt();
  const kept = foreign(second) < foreign(first) ? second : first;
  return kept.map((r) => ({ ...r, retried: true }));
}

/** The contenders a table cycle runs alone. */
const tabled = (contenders: readonly HttpContender[], settings: HttpSettings): readonly HttpContender[] =>
  settings.quick ? readAlone(contenders) : contenders;

/** How long a framework's cycles last, all told: the runs in sequence of the table cycles, and every cycle's pairs. */
const cyclesSeconds = (contenders: readonly HttpContender[], settings: HttpSettings): number =>
  settings.tableCycles * (2 * tabled(contenders, settings).length + 1) * (settings.runS + RUN_OVERHEAD_S) +
  settings.cycles *
    targetPairs(contenders, settings.quick).length *
    ((settings.pairWarmupS > 0 ? settings.pairWarmupS + RUN_OVERHEAD_S : 0) + 2 * (settings.pairRunS + RUN_OVERHEAD_S));

/**
 * One framework: every contender's server started at once (idle ones cost nothing), one load
 * generator, each server warmed up, then `cycles` cycles. In each, bare runs before, between
 * and after the contenders, each run short, so that a table's ratio compares runs seconds
 * apart; then the two sides of each target run at once on the one server core, once unmeasured
 * (`pairWarmupS`) and once each way round, and the geometric mean of the two quotients of
 * requests per CPU-second is what the target reads: the host's speed swings within seconds, and
 * two servers sharing the core meet the same swings.
 */
async function runFramework(
  framework: string,
  settings: HttpSettings,
  redis: BenchRedis,
  progress: Progress,
): Promise<HttpResult[]> {
  const contenders: HttpContender[] = [{ variant: 'bare', mode: 'pass' }, ...contendersFor(framework, settings.quick)];
  if (contenders.length > REDIS_DATABASES) throw new Error(`${framework}: more servers than Redis databases`);
  const cyclesS = cyclesSeconds(contenders.slice(1), settings);
  const cycleS = cyclesS / settings.cycles;
  const lifetimeMs = Math.round((cyclesS + contenders.length * settings.warmupS + 300) * 1000);
  await redis.flush();
  const ports = new Set<number>();
  while (ports.size < contenders.length) ports.add(await freePort());
  const servers = await Promise.all(
    contenders.map((c, i) => startServer(c, framework, i, [...ports][i] as number, redis, lifetimeMs)),
  );
  const client = spawnNode(CLIENT_CPU, 'http/load.ts', ['--connections', '50'], [], 'pipe');
  const results: HttpResult[] = [];
  try {
    const byLabel = new Map(servers.map((s) => [label(s.contender), s]));
    const pids: Record<string, number | undefined> = { client: client.pid, redis: redis.pid };
    for (const s of servers) pids[`server${s.port}`] = s.child.pid;
    const bare = servers[0] as Server;
    // Without the bare framework there is nothing to take a ratio against.
    if (bare.error !== undefined) for (const s of servers) s.error ??= `bare ${framework}: ${bare.error}`;
    const live = servers.filter((s) => s.unavailable === undefined && s.error === undefined);
    for (const server of live) {
      await loadOnce(client, { seconds: settings.warmupS, targets: [{ port: server.port, expect: 200 }] });
    }
    for (const s of servers.filter((s) => !live.includes(s))) {
      results.push({ round: 0, seq: 0, framework, ...s.contender, ...notMeasured(s) });
    }
    let seq = 0;
    let pair = 0;
    const others = live.filter((s) => s !== bare).map((s) => s.contender);
    const pairs = targetPairs(others, settings.quick);
    for (let cycle = 1; cycle <= settings.cycles; cycle++) {
      const name = `http ${framework} cycle ${cycle}/${settings.cycles}`;
      if (!live.includes(bare)) {
        progress.done(name, 'not measured', cycleS);
        continue;
      }
      const quiet = await waitForQuiet(pids, settings.quietWaitMs);
      let bareRps = 0;
      const tableCycle = cycle > settings.cycles - settings.tableCycles;
      const table = tableCycle ? cycleSequence(tabled(others, settings), cycle) : [];
      for (const contender of table) {
        const server = byLabel.get(label(contender)) as Server;
        const [result] = (await measureRuns([server], client, pids, settings.runS)) as [Measured];
        results.push({ round: cycle, seq: seq++, framework, ...contender, ...result, waitedMs: quiet.waitedMs });
        if (server === bare) bareRps = result.rps ?? 0;
      }
      const notes: string[] = [];
      for (const pairOf of pairSequence(pairs, cycle)) {
        const sides = pairOf.map((c) => byLabel.get(label(c)) as Server);
        // The load generator starts a pair's first side a moment before the second, and that
        // side read slower: 0.82× the other way round, over the 30 pairs of a quick run. So
        // every cycle loads each pair both ways round, in turn which goes first, and a target
        // reads the geometric mean of the two quotients (`pairedRatio`), where the lead cancels.
        // A server idle for a while answers its first fraction of a second slowly (each server's
        // first pair of a cycle read up to 0.57× its partner, one that had just run), and a
        // server in one pair idles a whole cycle: both are loaded together first, unmeasured (see
        // `pairWarmupS`).
        if (settings.pairWarmupS > 0)
          await loadOnce(client, { seconds: settings.pairWarmupS, targets: sides.map(expectedOf) });
        const quotients: number[] = [];
        for (const reversed of cycle % 2 === 0 ? [true, false] : [false, true]) {
          const measured = await measureRuns(reversed ? [...sides].reverse() : sides, client, pids, settings.pairRunS);
          const runs = (reversed ? measured.reverse() : measured) as [Measured, Measured];
          pairOf.forEach((contender, n) => {
            const result = { ...(runs[n] as Measured), waitedMs: quiet.waitedMs };
            results.push({ round: cycle, seq: seq++, framework, ...contender, ...result, pair });
          });
          pair++;
          quotients.push((runs[0].rpsPerCpuSec ?? 0) / (runs[1].rpsPerCpuSec ?? 1));
        }
        const [sluice, control] = pairOf;
        if ([FIXED_HEADERS, REDIS_ROUND_TRIP].includes(control.variant) && isSluice(sluice.variant)) {
          notes.push(`${sluice.variant} ÷ control ${ratio(geometricMean(quotients))}`);
        }
      }
      // Sluice ÷ each control, a rough look; bare's req/s where there are none (the `node` ceiling).
      progress.done(name, notes.join('  ') || (bareRps > 0 ? `${Math.round(bareRps)} req/s` : ''), cycleS);
    }
  } finally {
    client.stdin?.end();
    await Promise.all([stop(client), ...servers.map((s) => stop(s.child))]);
  }
  return results;
}

const notMeasured = (s: Server) => ({
  foreign: 0,
  retried: false,
  waitedMs: 0,
  ...(s.unavailable === undefined ? { error: s.error ?? 'not measured' } : { unavailable: s.unavailable }),
});

/** Every framework in turn, the `node` ceiling first. */
export async function runHttp(settings: HttpSettings, redis: BenchRedis, progress: Progress): Promise<HttpResult[]> {
  for (const framework of frameworks) {
    progress.plan(settings.cycles, cyclesSeconds(contendersFor(framework, settings.quick), settings) / settings.cycles);
  }
  const results: HttpResult[] = [];
  for (const framework of frameworks) results.push(...(await runFramework(framework, settings, redis, progress)));
  return results;
}
