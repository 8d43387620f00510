import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
const tsx = `${root}node_modules/.bin/tsx`;
const entry = `${root}packages/server/src/run.ts`;

/** One `sluice` process started from the sources, as the bin runs them. */
export interface SluiceProcess {
  readonly child: ChildProcess;
  /** stderr's JSON log lines so far, parsed. */
  readonly lines: Record<string, unknown>[];
  /** stderr and stdout as text, for error messages. */
  output(): string;
  /** Resolves with the exit code once the process is gone. */
  readonly exited: Promise<number | null>;
  kill(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * Runs `sluice <args>` and returns at once, with `env` added to this process's environment;
 * see `startSluice` to wait until it serves.
 */
export function runSluice(args: string[], env: NodeJS.ProcessEnv = {}): SluiceProcess {
  const child = spawn(tsx, ['--conditions=@sluice/source', entry, ...args], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  const lines: Record<string, unknown>[] = [];
  let text = '';
  let partial = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    text += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    text += chunk.toString();
    partial += chunk.toString();
    const parts = partial.split('\n');
    partial = parts.pop() ?? '';
    for (const part of parts) {
      try {
        lines.push(JSON.parse(part) as Record<string, unknown>);
      } catch {
        // Not a log line (a stack trace from tsx, say): kept in `output()` only.
      }
    }
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    lines,
    output: () => text,
    exited,
    kill(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

/**
 * Runs `sluice <args>` to its end: its exit code and what it wrote. One still running after
 * `timeoutMs` (a service that should have refused to start) is sent SIGTERM, which tsx passes
 * on to it (a SIGKILL would stop tsx alone, and leave the service running).
 */
export async function exitOf(
  args: string[],
  env?: NodeJS.ProcessEnv,
  timeoutMs = 15_000,
): Promise<{ code: number | null; output: string }> {
  const sluice = runSluice(args, env);
  const timer = setTimeout(() => sluice.kill('SIGTERM'), timeoutMs);
  try {
    return { code: await sluice.exited, output: sluice.output() };
  } finally {
    clearTimeout(timer);
  }
}

export interface ServingSluice extends SluiceProcess {
  readonly grpcPort: number;
  readonly httpPort: number;
  readonly grpcAddress: string;
  readonly httpUrl: string;
}

/**
 * Starts `sluice serve` on loopback, on free ports unless `args` name them, and waits for its
 * `listening` line.
 */
export async function startSluice(args: string[], timeoutMs = 15_000, env?: NodeJS.ProcessEnv): Promise<ServingSluice> {
  const unless = (flag: string, value: string) => (args.includes(flag) ? [] : [flag, value]);
  const defaults = [...unless('--host', '127.0.0.1'), ...unless('--grpc-port', '0'), ...unless('--http-port', '0')];
  const proc = runSluice(['serve', ...defaults, ...args], env);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const listening = proc.lines.find((line) => line.msg === 'listening');
    if (listening !== undefined) {
      const grpcPort = listening.grpcPort as number;
      const httpPort = listening.httpPort as number;
      return {
        ...proc,
        grpcPort,
        httpPort,
        grpcAddress: `127.0.0.1:${grpcPort}`,
        httpUrl: `http://127.0.0.1:${httpPort}`,
      };
    }
    if (proc.child.exitCode !== null || Date.now() > deadline) {
      await proc.kill('SIGKILL');
      throw new Error(`sluice serve did not start:\n${proc.output()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
