/**
 * Instructions a whole HTTP server executes per request: Node's HTTP stack, the framework and,
 * unless the variant is `bare`, the limiter or control the HTTP section runs (`http/apps`), a
 * count the machine's load does not move. Where the HTTP section's pairs say two servers differ
 * by a few per cent and the host's noise is as large, this says whether either executes more.
 * Each server runs alone under callgrind (`--single-threaded`, so the optimising compiler's
 * work is counted where it happens; V8's other flags as in the HTTP section), is warmed up,
 * then counted over a fixed number of requests from 10 connections. Runs the compiled
 * packages: `pnpm build` first.
 *   pnpm build && pnpm --dir bench exec tsx src/ceiling/server-instructions.ts [--cache] <framework> <pass|deny> <variant…>
 *   e.g. express pass bare fixed-headers sluice:memory
 * `--cache` adds callgrind's cache and branch simulation (the host processor's cache sizes) and
 * reports, per request beside the instructions, the misses of the first-level instruction and
 * data caches and the mispredicted branches: two servers that execute as much can still differ
 * in what each instruction costs. It runs about twice as slowly.
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
import { type BenchRedis, freePort, startRedis } from '../lib/redis-server.js';

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

/** Per counted request of one server: its instructions, and with `cache` the columns of `CACHE_COLUMNS`. */
async function count(
  framework: string,
  mode: string,
  variant: string,
  redis: BenchRedis | undefined,
  cache: boolean,
): Promise<number[]> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-server-callgrind-'));
  const port = await freePort();
  const server = spawnPinned(0, 'valgrind', [
    ...[
      '--tool=callgrind',
      ...(cache ? ['--cache-sim=yes', '--branch-sim=yes'] : []),
      `--callgrind-out-file=${dir}/cg`,
      process.execPath,
      '--single-threaded',
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
    return columns(cache).map(
      (column) => (CACHE_COLUMNS[column] ?? []).reduce((sum, event) => sum + total(event), 0) / COUNTED,
    );
  } finally {
    await stop(server, 10_000);
    rmSync(dir, { recursive: true, force: true });
  }
}

const cache = process.argv[2] === '--cache';
const [framework = '', mode = '', ...variants] = process.argv.slice(cache ? 3 : 2);
if (
  !['express', 'fastify', 'koa', 'node'].includes(framework) ||
  !['pass', 'deny'].includes(mode) ||
  variants.length === 0
) {
  throw new Error('usage: server-instructions.ts [--cache] <express|fastify|koa|node> <pass|deny> <variant…>');
}
const redis = variants.some((v) => usesRedis(v) || v === MEMORY_BESIDE_IDLE_CLIENT) ? await startRedis(1) : undefined;
try {
  const header = columns(cache);
  console.log(`| ${framework}, ${mode} path, per request | ${header.join(' | ')} |`);
  console.log(`| --- |${header.map(() => ' ---: |').join('')}`);
  for (const variant of variants) {
    await redis?.flush();
    const perRequest = await count(framework, mode, variant, redis, cache);
    console.log(`| ${variant} | ${perRequest.map((n) => Math.round(n).toLocaleString('en-US')).join(' | ')} |`);
  }
} finally {
  await redis?.stop();
}
