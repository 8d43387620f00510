import { createServer, type Server, Socket } from 'node:net';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { connectRedis, type RedisTarget } from './redis-env.js';
import { type RedisServer, startRedisServer } from './redis-server.js';

/**
 * A loopback TCP proxy in front of a Redis, for fault tests. In `forward` mode it relays both
 * ways. In `silent` mode it behaves like a server that accepts connections and never answers:
 * new connections are accepted and never read, and open ones stop reading what the client
 * sends (replies to commands Redis already received still come back, so nothing is lost in
 * flight). In `lose-replies` mode commands still reach Redis but its replies are dropped, as
 * when a network fails after Redis has run a command. Going back to `forward` resets the
 * connections of the other modes, as a recovered network would, so clients reconnect.
 * `hold()` keeps what clients send until `release()` passes it on, as a slow network would:
 * nothing is lost, and `heldBytes` says how much is waiting. `delay(ms)` passes each command on
 * `ms` after it was sent, in order, as a Redis that answers every call slowly.
 */
export interface RedisProxy {
  readonly port: number;
  silence(): void;
  loseReplies(): void;
  hold(): void;
  release(): void;
  readonly heldBytes: number;
  delay(ms: number): void;
  /** Commands `delay` holds back now, on every connection. */
  readonly delaying: number;
  forward(): void;
  close(): Promise<void>;
}

export async function startRedisProxy(targetPort: number, mode: 'forward' | 'silent' = 'forward'): Promise<RedisProxy> {
  let silent = mode === 'silent';
  let losing = false;
  let held: { upstream: Socket; chunk: Buffer }[] | undefined;
  let delayMs = 0;
  let delaying = 0;
  const open = new Set<Socket>();

  const relay = (client: Socket) => {
    const upstream = new Socket();
    open.add(upstream);
    upstream.on('close', () => open.delete(upstream));
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    // Delayed commands in the order sent, each passed on once its own delay is over; one sent
    // with no delay waits for those before it.
    let delayed = Promise.resolve();
    let waiting = 0;
    const passOn = (chunk: Buffer) => {
      if (delayMs === 0 && waiting === 0) {
        upstream.write(chunk);
        return;
      }
      const due = performance.now() + delayMs;
      waiting++;
      delaying++;
      delayed = delayed
        .then(() => new Promise((resolve) => setTimeout(resolve, due - performance.now())))
        .then(() => {
          waiting--;
          delaying--;
          upstream.write(chunk);
        });
    };
    upstream.connect(targetPort, '127.0.0.1', () => {
      client.on('data', (chunk: Buffer) => {
        if (silent) client.pause();
        else if (held !== undefined) held.push({ upstream, chunk });
        else passOn(chunk);
      });
      upstream.on('data', (chunk) => {
        if (!losing) client.write(chunk);
      });
    });
  };

  const server: Server = createServer((client) => {
    open.add(client);
    client.on('close', () => open.delete(client));
    client.on('error', () => {});
    if (silent) client.pause();
    else relay(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };

  return {
    port,
    silence() {
      silent = true;
    },
    loseReplies() {
      losing = true;
    },
    hold() {
      held ??= [];
    },
    release() {
      const waiting = held ?? [];
      held = undefined;
      for (const { upstream, chunk } of waiting) upstream.write(chunk);
    },
    delay(ms) {
      delayMs = ms;
    },
    get delaying() {
      return delaying;
    },
    get heldBytes() {
      return (held ?? []).reduce((sum, { chunk }) => sum + chunk.length, 0);
    },
    forward() {
      silent = false;
      losing = false;
      held = undefined;
      delayMs = 0;
      for (const socket of open) socket.destroy();
    },
    async close() {
      held = undefined;
      for (const socket of open) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A suite's own redis-server behind a proxy, and an admin client that goes to it directly. */
export interface ProxiedRedis {
  server: RedisServer;
  proxy: RedisProxy;
  admin: Redis;
}

/**
 * Starts a private redis-server and a proxy in front of it before the suite's tests and stops
 * both after them. Fails the suite under CI when redis-server is missing.
 */
export function proxiedRedisForSuite(target: RedisTarget<unknown>): ProxiedRedis {
  const started = {} as Partial<ProxiedRedis>;
  beforeAll(async () => {
    target.require();
    const server = await startRedisServer();
    started.server = server;
    started.proxy = await startRedisProxy(server.port);
    started.admin = await connectRedis(server.url);
  });
  afterAll(async () => {
    started.admin?.disconnect();
    await started.proxy?.close();
    await started.server?.stop();
  });
  return started as ProxiedRedis;
}
