import { setTimeout as nextTurn } from 'node:timers/promises';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { createRedisStore, type RedisStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { backingOf } from '../../packages/redis/src/backing.js';
import { freePort } from '../helpers/redis-server.js';

setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

// Many stores over one client, as an app with a store per route's middleware, or a test suite
// with a store per test, makes them. No Redis is needed: the client is never connected.
describe('Redis store: many stores over one client', () => {
  const clients: Redis[] = [];
  const lazyClient = async () => {
    const client = new Redis(await freePort(), '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0 });
    clients.push(client);
    return client;
  };
  afterEach(() => {
    for (const client of clients.splice(0)) client.disconnect();
  });

  // Each store added a 'ready' listener to a client not yet connected: ioredis warned past ten,
  // and a Redis down at start-up kept them all (500 stores, 500 listeners).
  it('adds one ready listener to a client that is not connected yet, however many stores', async () => {
    const client = await lazyClient();
    const before = client.listenerCount('ready');
    for (let i = 0; i < 50; i++) createRedisStore({ client, prefix: 'route:' });
    expect(client.listenerCount('ready') - before).toBe(1);
  });

  // The deny caches of a client and prefix were held weakly, but their references were let go
  // only at a refund or reset: 20,000 stores made and dropped left 20,000.
  it('lets go of the deny caches of stores that were dropped', async () => {
    const client = await lazyClient();
    for (let i = 0; i < 200; i++) createRedisStore({ client, prefix: 'dropped:' });
    // A WeakRef's target lives at least until the job that made it ends.
    await nextTurn(0);
    collectGarbage();
    const kept: RedisStore[] = [];
    for (let i = 0; i < 100; i++) kept.push(createRedisStore({ client, prefix: 'dropped:' }));
    expect(backingOf(client, 'dropped:', 'exact').denyCaches.size).toBe(kept.length);
  });
});
