import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { spawnPinned, stop } from './children.js';

export interface BenchRedis {
  port: number;
  pid: number;
  /** Empties this private server between jobs, so no job inherits another's keys. */
  flush(): Promise<void>;
  stop(): Promise<void>;
}

/** A port the OS says is free now; never 6379, which the test suite uses. */
export async function freePort(): Promise<number> {
  for (let i = 0; i < 10; i++) {
    const port = await new Promise<number>((resolve, reject) => {
      const server = createServer();
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        const address = server.address();
        server.close(() => resolve(typeof address === 'object' && address !== null ? address.port : 0));
      });
    });
    if (port !== 6379 && port > 0) return port;
  }
  throw new Error('no free port for redis-server');
}

/**
 * Starts a private, non-persistent redis-server on loopback, pinned to `cpu` so that its work
 * is never charged to the process under test.
 */
export async function startRedis(cpu: number): Promise<BenchRedis> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-redis-'));
  const child = spawnPinned(cpu, 'redis-server', [
    '--bind',
    '127.0.0.1',
    '--port',
    String(port),
    '--save',
    '',
    '--appendonly',
    'no',
    '--dir',
    dir,
    '--daemonize',
    'no',
    '--loglevel',
    'warning',
    // One per HTTP server of a framework's group, so that no two share a key: Express has 17.
    '--databases',
    '32',
  ]);
  try {
    await untilListening(port, 5000);
  } catch (error) {
    await stop(child);
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  const admin = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: 1 });
  return {
    port,
    pid: child.pid as number,
    flush: async () => {
      await admin.flushall();
    },
    stop: async () => {
      admin.disconnect();
      await stop(child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Polls until something accepts TCP connections on the port. */
export async function untilListening(port: number, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    await sleep(50);
  }
  throw new Error(`nothing listens on port ${port} after ${timeoutMs} ms`);
}
