import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** One example's package.json script, run as `pnpm --filter <example> <script>` runs it. */
export interface ExampleProcess {
  readonly child: ChildProcess;
  /** stdout and stderr so far. */
  output(): string;
  /** The first match of `pattern` in the output; rejects on exit or after `timeoutMs`. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** Resolves with the exit code once every process of the run is gone. */
  readonly exited: Promise<number | null>;
  /** SIGTERM to the whole run (pnpm's shell, tsx and node), SIGKILL if it lingers. */
  stop(): Promise<number | null>;
}

const running = new Set<ExampleProcess>();
// A test runner that dies must not leave example servers behind.
process.once('exit', () => {
  for (const example of running) killGroup(example.child, 'SIGKILL');
});

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // Already gone.
  }
}

/**
 * Runs `script` from `examples/<example>/package.json` with extra `args`, in the example's
 * directory, with both `node_modules/.bin` on the PATH, in a process group of its own so that
 * `stop()` ends tsx's node child too.
 */
export function runExample(
  example: string,
  script: string,
  options: { args?: readonly string[]; env?: Record<string, string> } = {},
): ExampleProcess {
  const dir = join(root, 'examples', example);
  const scripts = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).scripts as Record<string, string>;
  const command = scripts[script];
  if (command === undefined) throw new Error(`examples/${example} has no script ${script}`);
  const child = spawn('sh', ['-c', [command, ...(options.args ?? [])].join(' ')], {
    cwd: dir,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      PATH: [join(dir, 'node_modules/.bin'), join(root, 'node_modules/.bin'), process.env.PATH].join(delimiter),
      ...options.env,
    },
  });
  let text = '';
  const waiters = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    text += chunk.toString();
    for (const wake of waiters) wake();
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  const exited = new Promise<number | null>((resolve) =>
    child.once('close', (code) => {
      resolve(code);
      for (const wake of waiters) wake();
    }),
  );
  const example_: ExampleProcess = {
    child,
    output: () => text,
    exited,
    waitFor(pattern, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`examples/${example} ${script}: no ${pattern} within ${timeoutMs} ms. Output:\n${text}`));
        }, timeoutMs);
        function check() {
          const match = text.match(pattern);
          if (match === null && child.exitCode === null && child.signalCode === null) return;
          waiters.delete(check);
          clearTimeout(timer);
          if (match !== null) resolve(match);
          else reject(new Error(`examples/${example} ${script} exited before ${pattern}. Output:\n${text}`));
        }
        waiters.add(check);
        check();
      });
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        killGroup(child, 'SIGTERM');
        const timer = setTimeout(() => killGroup(child, 'SIGKILL'), 3_000);
        await exited;
        clearTimeout(timer);
      }
      // tsx's node child may outlive the shell by a moment: end the group for good.
      killGroup(child, 'SIGKILL');
      running.delete(example_);
      return exited;
    },
  };
  running.add(example_);
  return example_;
}

/** Runs a script that exits by itself to its end, bounded by `timeoutMs`. */
export async function runToEnd(
  example: string,
  script: string,
  timeoutMs = 12_000,
  args: readonly string[] = [],
): Promise<{ code: number | null; output: string }> {
  const run = runExample(example, script, { args });
  const timer = setTimeout(() => void run.stop(), timeoutMs);
  const code = await run.exited;
  clearTimeout(timer);
  await run.stop();
  return { code, output: run.output() };
}

/** Listens on `port` (0: any) of loopback and closes again: the port, or 0 if it was taken. */
function probePort(port: number): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(0));
    server.listen(port, '127.0.0.1', () => {
      const { port: bound } = server.address() as { port: number };
      server.close(() => resolve(bound));
    });
  });
}

/** The first of `count` loopback ports in a row that nobody listens on now, for an example's `PORT`. */
export async function freePort(count = 1): Promise<number> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const first = await probePort(0);
    let free = first !== 0 && first + count <= 65_536;
    for (let i = 1; free && i < count; i++) free = (await probePort(first + i)) !== 0;
    if (free) return first;
  }
  throw new Error(`no ${count} free loopback ports in a row`);
}

export interface CurlRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
}

/** The requests of the `curl` lines an example printed after `try:`: what a user would send. */
export function printedCurls(output: string): CurlRequest[] {
  return [...output.matchAll(/try: (curl [^\n]*?)(?: {2,}| \(|\n|$)/g)].map((match) => {
    const tokens = [...(match[1] as string).matchAll(/'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2] ?? '');
    const curl: CurlRequest = { method: 'GET', url: '', headers: {} };
    for (let i = 1; i < tokens.length; i++) {
      const token = tokens[i] as string;
      if (token === '-X') curl.method = tokens[++i] as string;
      else if (token === '-H') {
        const [name, ...value] = (tokens[++i] as string).split(':');
        curl.headers[(name as string).trim().toLowerCase()] = value.join(':').trim();
      } else if (!token.startsWith('-')) curl.url = token;
    }
    return curl;
  });
}

/** The request of the one `curl` line an example printed. */
export function printedCurl(output: string): CurlRequest {
  const [curl, ...more] = printedCurls(output);
  if (curl === undefined || more.length > 0) throw new Error(`not one curl line printed. Output:\n${output}`);
  return curl;
}
