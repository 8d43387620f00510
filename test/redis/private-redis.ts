import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { type RedisServer, startRedisServer } from '../helpers/redis-server.js';

export interface PrivateRedis {
  readonly server: RedisServer;
  /** A client of its own, to inspect the server or fault it (`CONFIG SET`, its process id). */
  readonly admin: Redis;
}

/**
 * A redis-server the suite owns, on a spare port: started before its tests, stopped after them.
 * Call it in the suite's `describe`; read the fields in tests only.
 */
export function privateRedis(): PrivateRedis {
  const handle = {} as { server: RedisServer; admin: Redis };
  beforeAll(async () => {
    handle.server = await startRedisServer();
    handle.admin = new Redis(handle.server.port, '127.0.0.1', { maxRetriesPerRequest: 0 });
    await handle.admin.ping();
  });
  afterAll(async () => {
    handle.admin?.disconnect();
    await handle.server?.stop();
  });
  return handle;
}
