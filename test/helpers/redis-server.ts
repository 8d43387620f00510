import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const hasRedisServer = (): boolean => spawnSync('redis-server', ['--version']).status === 0;

/** A loopback port nobody listens on now, with `port + 10000` free as well (a Cluster bus port). */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = await listenOnce(0);
    if (port < 55_000 && (await listenOnce(port + 10_000).catch(() => 0)) !== 0) return port;
  }
  throw new Error('no free port pair found');
}

function listenOnce(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      const { port: bound } = server.address() as { port: number };
      server.close(() => resolve(bound));
    });
  });
}

/** True once the port answers PING: with PONG, or asking for a password first. */
export function pings(port: number, timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('error', () => done(false));
    socket.once('data', (data) => done(/^(\+PONG|-NOAUTH)/.test(data.toString())));
    socket.connect(port, '127.0.0.1', () => socket.write('PING\r\n'));
  });
}

export async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A redis-server this test owns on a spare port: it may kill and restart it. */
export interface RedisServer {
  readonly port: number;
  readonly url: string;
  readonly dir: string;
  /** Starts it (again) on the same port and waits until it answers. */
  start(): Promise<void>;
  /** SIGKILL, as a crash would, and waits for the process to be gone. */
  kill(): Promise<void>;
  /** Stops it for good and removes its directory. */
  stop(): Promise<void>;
}

const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/**
 * Starts redis-server on `port` (a spare one when absent) and waits until `answers` says it
 * does: by default a plain PING; a server that speaks only TLS needs a check of its own.
 */
export async function startRedisServer(
  extraArgs: string[] = [],
  port?: number,
  answers: (port: number) => Promise<boolean> = pings,
): Promise<RedisServer> {
  const chosen = port ?? (await freePort());
  const dir = mkdtempSync(join(tmpdir(), `sluice-redis-${chosen}-`));
  let child: ChildProcess | undefined;
  const args = ['--port', String(chosen), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir];
  const server: RedisServer = {
    port: chosen,
    url: `redis://127.0.0.1:${chosen}`,
    dir,
    async start() {
      const started = spawn('redis-server', [...args, ...extraArgs], { stdio: 'ignore' });
      child = started;
      running.add(started);
      started.once('exit', () => running.delete(started));
      await waitFor(`redis-server on port ${chosen}`, () => answers(chosen));
    },
    async kill() {
      const victim = child;
      if (victim === undefined || victim.exitCode !== null || victim.signalCode !== null) return;
      const gone = new Promise((resolve) => victim.once('exit', resolve));
      victim.kill('SIGKILL');
      await gone;
    },
    async stop() {
      await server.kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await server.start();
  return server;
}
