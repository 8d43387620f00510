import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const live = new Set<ChildProcess>();

/**
 * Whether this process runs the compiled bench (`dist/`, as `pnpm bench` does) or its source
 * through tsx (a single tool run by hand): children run the same way as their parent, so a
 * hand-run tool never starts a stale build. Compiled, a child starts in about half the time:
 * Node 20 consults tsx's loader thread for every module a child loads.
 */
const compiled = import.meta.url.endsWith('.js');

/**
 * Node flags every child needs to run an entry point as this process runs: from source, the
 * tsx loader alone. Without sluice's source condition, `@sluice/*` resolve to the packages'
 * compiled `dist/`, the JavaScript their users run (and `pnpm bench` builds first), as the
 * peers run from theirs. Through tsx the source would pay a `__name` call for every named
 * closure created per call, which no user does.
 */
export const nodeFlags = compiled ? [] : ['--import', import.meta.resolve('tsx')];

/** An entry point of this bench, named by its source path (`http/serve.ts`), as an absolute path for `node` to run. */
export const entryPoint = (source: string): string =>
  fileURLToPath(new URL(`../${compiled ? source.replace(/\.ts$/, '.js') : source}`, import.meta.url));

/** A file or directory of this package by its path from the package's root (`results`, `src/service/rules`). */
export const packageFile = (relative: string): string => fileURLToPath(new URL(`../../${relative}`, import.meta.url));

/**
 * Starts `command` on one CPU only (or a list, `'0,1'`). `taskset` execs the command, so the
 * child's pid is the measured process itself, which is what the CPU accounting in `cpu.ts` reads.
 */
export function spawnPinned(
  cpu: number | string,
  command: string,
  args: readonly string[],
  stdin: 'ignore' | 'pipe' = 'ignore',
): ChildProcess {
  const child = spawn('taskset', ['-c', String(cpu), command, ...args], { stdio: [stdin, 'pipe', 'pipe'] });
  live.add(child);
  child.once('exit', () => live.delete(child));
  return child;
}

/** Runs an entry point of this package, named by its source path, pinned to `cpu` (see `entryPoint`). */
export const spawnNode = (
  cpu: number | string,
  file: string,
  args: readonly string[],
  flags: readonly string[] = [],
  stdin: 'ignore' | 'pipe' = 'ignore',
) => spawnPinned(cpu, process.execPath, [...nodeFlags, ...flags, entryPoint(file), ...args], stdin);

export interface Finished {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Waits for a child to exit, killing it once `timeoutMs` has passed. */
export function finish(child: ChildProcess, timeoutMs: number): Promise<Finished> {
  let stdout = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
  });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      stderr += `\n[bench] killed after ${timeoutMs} ms`;
      stop(child);
    }, timeoutMs);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Resolves with the first stdout line matching `pattern`; rejects on exit or timeout. */
export function waitForLine(child: ChildProcess, pattern: RegExp, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let buffered = '';
    const onData = (chunk: Buffer) => {
      buffered += chunk.toString('utf8');
      const line = buffered.split('\n').find((l) => pattern.test(l));
      if (line !== undefined) done(() => resolve(line));
    };
    const onExit = (code: number | null) => done(() => reject(new Error(`exited with code ${code} before ready`)));
    const timer = setTimeout(() => done(() => reject(new Error(`not ready within ${timeoutMs} ms`))), timeoutMs);
    const done = (settle: () => void) => {
      clearTimeout(timer);
      child.stdout?.off('data', onData);
      child.off('exit', onExit);
      settle();
    };
    child.stdout?.on('data', onData);
    child.once('exit', onExit);
  });
}

/** Stops a child by its own pid: SIGTERM, then SIGKILL if it lingers. */
export function stop(child: ChildProcess, graceMs = 2000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/** Last resort on any exit path: no benchmark process may outlive the run. */
export function killAll(): void {
  for (const child of live) child.kill('SIGKILL');
  live.clear();
}

/** Parses the last JSON line a worker printed. */
export function lastJson<T>(stdout: string): T {
  const line = stdout
    .trim()
    .split('\n')
    .reverse()
    .find((l) => l.startsWith('{'));
  if (line === undefined) throw new Error('worker printed no result');
  return JSON.parse(line) as T;
}
