/**
 * Instructions a whole HTTP server executes per request: Node's HTTP stack, the framework and,
 * unless the variant is `bare`, the limiter or control the HTTP section runs (`http/apps`), a
 * count the machine's load does not move. Where the HTTP section's pairs say two servers differ
 * by a few per cent and the host's noise is as large, this says whether either executes more.
 * Each server runs alone under callgrind (`--single-threaded`, so the optimising compiler's
 * work is counted where it happens; V8's other flags as in the HTTP section), is warmed up,
 * then counted over a fixed number of requests from 10 connections. Runs the compiled
 * packages: `pnpm build` first.
 *   pnpm build && pnpm --dir bench exec tsx src/ceiling/server-instructions.ts [--cache] [--functions N] <framework> <pass|deny> <variant…>
 *   e.g. express pass bare fixed-headers sluice:memory
 * `--cache` adds callgrind's cache and branch simulation (the host processor's cache sizes) and
 * reports, per request beside the instructions, the misses of the first-level instruction and
 * data caches and the mispredicted branches: two servers that execute as much can still differ
 * in what each instruction costs. It runs about twice as slowly.
 * `--functions N` also lists, for each variant after the first, the N functions whose own costs
 * per request differ most from the first variant's (compiled JavaScript named through node's
 * `--perf-basic-prof` map): where the difference comes from, Node's and the framework's code
 * included.
 * That map makes V8 report every object it moves (`Heap::OnMoveEvent`), which can make a
 * server's collections costly: read totals from a run without it (a Koa server refusing from
 * the deny cache counted 193,530 a request with it, nearly all in the young-generation
 * collector, and 108,651 in the same count without it).
 *
 * Work done on a timer (local-first's sync every 50 ms, a client's reconnect checks) runs as
 * often per second under callgrind as outside it, while requests arrive some 50 times more
 * slowly: here it weighs that much more per request than it does in the HTTP section.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MEMORY_BESIDE_IDLE_CLIENT } from '../http/apps/app.js';
import { SERVER_V8_FLAGS, usesRedis } from '../http/plan.js';
import { entryPoint, nodeFlags, spawnPinned, stop, waitForLine } from '../lib/children.js';
import { int } from '../lib/format.js';
import { type BenchRedis, freePort, startRedis } from '../lib/redis-server.js';
import { type FunctionCosts, functionCosts } from './callgrind-functions.js';

/**
 * Requests before the count starts. After 20,000 a Koa server's count still carried the
 * optimising compiler's work (236,882 instructions a request with fixed fields, 123,764 after
 * 60,000).
 */
const WARM_UP = 60_000;
const COUNTED = 20_000;
const CONNECTIONS = 10;

type Autocannon = (
  options: Record<string, unknown>,
  done: (
    error: Error | null,
    result: { errors: number; timeouts: number; statusCodeStats: Record<string, { count: number }> },
  ) => void,
) => unknown;
const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

/**
 * Sends `amount` requests; fails unless all but `exceptions` answered `expected` (a 429 path's
 * first request passes, in the warm-up).
 */
function load(port: number, amount: number, expected: number, exceptions = 0): Promise<void> {
  return new Promise((resolve, reject) => {
    autocannon({ url: `http://127.0.0.1:${port}/`, connections: CONNECTIONS, amount }, (error, result) => {
      const answered = result?.statusCodeStats?.[String(expected)]?.count ?? 0;
      if (error !== null) reject(error);
      else if (result.errors + result.timeouts > 0 || answered < amount - exceptions)
        reject(
          new Error(
            `${amount - answered} of ${amount} requests did not answer ${expected}: ${JSON.stringify(result.statusCodeStats)}`,
          ),
        );
      else resolve();
    });
  });
}

/** Callgrind's events with `--cache`, summed as the table shows them. */
const CACHE_COLUMNS: Record<string, readonly string[]> = {
  instructions: ['Ir'],
  'L1 instruction misses': ['I1mr'],
  'L1 data misses': ['D1mr', 'D1mw'],
  'mispredicted branches': ['Bcm', 'Bim'],
};
const columns = (cache: boolean) => (cache ? Object.keys(CACHE_COLUMNS) : ['instructions']);

interface Counted {
  /** Per counted request: the instructions, and with `cache` the columns of `CACHE_COLUMNS`. */
  perRequest: number[];
  /** With `functions`: each function's own costs per counted request, in `events`' order. */
  functions?: { events: string[]; costs: FunctionCosts };
}

/** One server's counts over `COUNTED` requests. */
async function count(
  framework: string,
  mode: string,
  variant: string,
  redis: BenchRedis | undefined,
  cache: boolean,
  functions: boolean,
): Promise<Counted> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-server-callgrind-'));
  const port = await freePort();
  const server = spawnPinned(0, 'valgrind', [
    ...[
      '--tool=callgrind',
      ...(cache ? ['--cache-sim=yes', '--branch-sim=yes'] : []),
      `--callgrind-out-file=${dir}/cg`,
      process.execPath,
      '--single-threaded',
      ...(functions ? ['--perf-basic-prof'] : []),
      ...SERVER_V8_FLAGS,
    ],
    ...[...nodeFlags, entryPoint('http/serve.ts'), '--framework', framework, '--variant', variant, '--mode', mode],
    ...['--port', String(port), '--lifetime', '1800000'],
    ...(redis === undefined ? [] : ['--redis-port', String(redis.port)]),
  ]);
  try {
    const line = await waitForLine(server, /^(ready|\{)/, 300_000);
    if (line !== 'ready') throw new Error(`${variant}: ${line}`);
    const expected = mode === 'deny' ? 429 : 200;
    // On the deny path the first request passes; on a remote store, so may the few in flight
    // beside it: slowed some 50 times, they can outlast the store's 100 ms timeout, and the fail
    // policy lets them through. The count that follows allows no exception.
    await load(port, WARM_UP, expected, mode === 'deny' ? CONNECTIONS : 0);
    const pid = String(server.pid);
    execFileSync('callgrind_control', ['--zero', pid], { stdio: 'ignore' });
    await load(port, COUNTED, expected);
    execFileSync('callgrind_control', ['--dump', pid], { stdio: 'ignore' });
    const dump = readFileSync(`${dir}/cg.1`, 'utf8');
    const events = /^events: (.+)$/m.exec(dump)?.[1]?.split(' ');
    const summary = /^summary: (.+)$/m.exec(dump)?.[1]?.split(' ').map(Number);
    if (events === undefined || summary === undefined) throw new Error(`${variant}: callgrind wrote no summary`);
    const total = (event: string) => summary[events.indexOf(event)] ?? Number.NaN;
    const perRequest = columns(cache).map(
      (column) => (CACHE_COLUMNS[column] ?? []).reduce((sum, event) => sum + total(event), 0) / COUNTED,
    );
    if (!functions) return { perRequest };
    await stop(server, 10_000);
    return { perRequest, functions: functionCosts(`${dir}/cg.1`, perfMap(server.pid), COUNTED) };
  } finally {
    await stop(server, 10_000);
    rmSync(dir, { recursive: true, force: true });
    if (functions) rmSync(perfMap(server.pid), { force: true });
  }
}

/** Where node writes the map of its compiled code (`--perf-basic-prof`): under callgrind, the server's own pid. */
const perfMap = (pid: number | undefined): string => `/tmp/perf-${pid}.map`;

/**
 * The `most` functions whose own costs per request differ most, by instructions, between
 * `base` and `other`: each one's instructions in both and the difference of each column.
 */
function functionDifferences(base: Counted, other: Counted, variant: string, most: number, cache: boolean): string[] {
  const { events, costs } = other.functions as NonNullable<Counted['functions']>;
  const baseCosts = (base.functions as NonNullable<Counted['functions']>).costs;
  const columnOf = (values: readonly number[], column: string) =>
    (CACHE_COLUMNS[column] ?? []).reduce((sum, event) => sum + (values[events.indexOf(event)] ?? 0), 0);
  const shown = columns(cache);
  const rows = [...new Set([...costs.keys(), ...baseCosts.keys()])].map((name) => {
    const mine = costs.get(name) ?? [];
    const theirs = baseCosts.get(name) ?? [];
    return { name, mine, theirs, change: shown.map((c) => columnOf(mine, c) - columnOf(theirs, c)) };
  });
  rows.sort((a, b) => Math.abs(b.change[0] as number) - Math.abs(a.change[0] as number));
  return [
    '',
    `| ${variant} − the first variant, per request: function | instructions, first | instructions, this | ${shown.map((c) => `Δ ${c}`).join(' | ')} |`,
    `| --- | ---: | ---: |${shown.map(() => ' ---: |').join('')}`,
    ...rows
      .slice(0, most)
      .map(
        (r) =>
          `| ${r.name.replaceAll('|', '\\|')} | ${int(columnOf(r.theirs, 'instructions'))} | ${int(columnOf(r.mine, 'instructions'))} | ${r.change.map(int).join(' | ')} |`,
      ),
  ];
}

const usage =
  'usage: server-instructions.ts [--cache] [--functions N] <express|fastify|koa|node> <pass|deny> <variant…>';
const argv = process.argv.slice(2);
const cache = argv[0] === '--cache';
if (cache) argv.shift();
const most = argv[0] === '--functions' ? Number(argv[1]) : 0;
if (argv[0] === '--functions') {
  if (!Number.isInteger(most) || most < 1) throw new Error(usage);
  argv.splice(0, 2);
}
const [framework = '', mode = '', ...variants] = argv;
if (
  !['express', 'fastify', 'koa', 'node'].includes(framework) ||
  !['pass', 'deny'].includes(mode) ||
  variants.length === 0
) {
  throw new Error(usage);
}
const redis = variants.some((v) => usesRedis(v) || v === MEMORY_BESIDE_IDLE_CLIENT) ? await startRedis(1) : undefined;
try {
  const header = columns(cache);
  console.log(`| ${framework}, ${mode} path, per request | ${header.join(' | ')} |`);
  console.log(`| --- |${header.map(() => ' ---: |').join('')}`);
  const counted: Counted[] = [];
  for (const variant of variants) {
    await redis?.flush();
    const one = await count(framework, mode, variant, redis, cache, most > 0);
    counted.push(one);
    console.log(`| ${variant} | ${one.perRequest.map(int).join(' | ')} |`);
  }
  for (let i = 1; most > 0 && i < counted.length; i++) {
    const lines = functionDifferences(counted[0] as Counted, counted[i] as Counted, variants[i] as string, most, cache);
    console.log(lines.join('\n'));
  }
} finally {
  await redis?.stop();
}
