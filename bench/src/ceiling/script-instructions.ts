/**
 * Instructions Redis executes per call of each script sluice's Redis store sends: a count
 * that does not move with the machine's load, for judging a change to a script on a busy
 * machine. Redis runs under callgrind on a free port; each captured call (and INCR, and the
 * floor of any script) is replayed by redis-benchmark, 16 deep, over 300 random clients
 * filled by a first pass; then the second pass is counted. Reported: the instructions of the
 * whole server per call (with reading and writing the socket) and of the command alone.
 * Beside each captured call, the same call answered by the cheapest script (the bench's
 * control for the three-policy target, `inproc/cheapest-script.ts`) with its state in
 * binary: what a further policy costs sluice is read against what it costs there. After the
 * floors, the least whole decisions any store could make (`leastDecisionCases`: the policy's
 * figures in the script, the state a few numbers, the reply one): what sluice's layout and
 * the figures and reply its calls carry cost over them.
 *   pnpm --dir bench exec tsx --conditions=@sluice/source src/ceiling/script-instructions.ts
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { type CheapestAlgorithm, cheapestScript } from '../inproc/cheapest-script.js';
import { finish, spawnPinned, stop } from '../lib/children.js';
import { freePort, startRedis, untilListening } from '../lib/redis-server.js';
import { leastDecisionCases, replayCases } from './floor.js';
import type { RedisBenchCase } from './redis-benchmark.js';
import { type CapturedScript, captureScript } from './scripts.js';

const CALLS = 1000;
const CLIENTS = 300;

const commandFunctions: Record<string, string> = { EVALSHA: 'evalShaCommand', INCR: 'incrCommand' };

const port = await freePort();
const dir = mkdtempSync(join(tmpdir(), 'sluice-callgrind-'));
const server = spawnPinned(1, 'valgrind', [
  ...['--tool=callgrind', `--callgrind-out-file=${dir}/cg.%p`, 'redis-server'],
  ...['--bind', '127.0.0.1', '--port', String(port), '--save', '', '--appendonly', 'no', '--dir', dir],
]);
const pid = String(server.pid);
let dumps = 0;

/** Replays the command `CALLS` times, 16 deep, over `CLIENTS` random clients. */
async function replay(command: string[]) {
  const child = spawnPinned(0, 'redis-benchmark', [
    ...['-h', '127.0.0.1', '-p', String(port), '-c', '50', '-n', String(CALLS)],
    ...['-P', '16', '-r', String(CLIENTS), '-q', ...command],
  ]);
  const done = await finish(child, 600_000);
  if (done.code !== 0) throw new Error(done.stderr);
}

/** Instructions since the last zeroing: the whole server's, and the command function's own (inclusive). */
function counted(command: string): { total: number; command: number } {
  execFileSync('callgrind_control', ['-d', pid], { stdio: 'ignore' });
  dumps++;
  const file = readdirSync(dir).find((f) => f === `cg.${pid}.${dumps}`);
  if (file === undefined) throw new Error('callgrind wrote no dump');
  const annotated = execFileSync('callgrind_annotate', ['--inclusive=yes', join(dir, file)], { encoding: 'utf8' });
  const number = (line: string | undefined) => Number(line?.trim().split(/\s+/)[0]?.replaceAll(',', ''));
  const lines = annotated.split('\n');
  const name = commandFunctions[command] as string;
  return {
    total: number(lines.find((l) => l.includes('PROGRAM TOTALS'))),
    command: number(lines.find((l) => l.includes(`:${name} `))),
  };
}

/** The calls a real store sends, captured on a plain Redis: under callgrind a call outlasts the limiter's timeout. */
async function capturedScripts(): Promise<CapturedScript[]> {
  const plain = await startRedis(1);
  try {
    const scripts: CapturedScript[] = [];
    for (const [algorithm, count, decisions] of [
      ['gcra', 1, 1],
      ['sliding-window-counter', 1, 1],
      ['gcra', 3, 1],
      ['sliding-window-counter', 3, 1],
      ['gcra', 1, 32],
      ['gcra', 3, 32],
      ['sliding-window-counter', 1, 32],
      ['sliding-window-counter', 3, 32],
    ] as const) {
      scripts.push(await captureScript(plain.port, algorithm, count, decisions));
    }
    return scripts;
  } finally {
    await plain.stop();
  }
}

/** The captured call answered by the cheapest binary script, with the same keys and arguments. */
function cheapestCase(captured: CapturedScript): RedisBenchCase {
  const lua = cheapestScript(captured.algorithm as CheapestAlgorithm, 'binary');
  const sha = createHash('sha1').update(lua).digest('hex');
  const label = captured.label.replace('sluice', 'cheapest binary');
  return { label, command: ['EVALSHA', sha, ...captured.args], script: { lua, sha, decisions: captured.decisions } };
}

await untilListening(port, 60_000);
const admin = new Redis({ port, host: '127.0.0.1' });
try {
  const captured = await capturedScripts();
  const { cases, floors } = replayCases(captured);
  if (!floors) throw new Error('the floors need the one-policy gcra and counter calls');
  for (const benchCase of [...cases, ...leastDecisionCases(captured), ...captured.map(cheapestCase)]) {
    await admin.flushall();
    if (benchCase.script !== undefined) await admin.script('LOAD', benchCase.script.lua);
    await replay(benchCase.command);
    execFileSync('callgrind_control', ['-z', pid], { stdio: 'ignore' });
    await replay(benchCase.command);
    const { total, command } = counted(benchCase.command[0] as string);
    const per = (n: number) => Math.round(n / CALLS / (benchCase.script?.decisions ?? 1)).toLocaleString('en');
    console.log(
      `${benchCase.label.padEnd(48)} ${per(total).padStart(9)} server ${per(command).padStart(9)} command  (instructions per decision)`,
    );
  }
} finally {
  admin.disconnect();
  await stop(server, 10_000);
  rmSync(dir, { recursive: true, force: true });
}
