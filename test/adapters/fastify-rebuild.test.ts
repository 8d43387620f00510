import { rateLimitPlugin } from '@sluice/fastify';
import { createMemoryStore } from '@sluice/memory';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { clockAt } from './helpers.js';

const ok = async () => 'ok';

/** An app as a test suite builds one for each test, over a store the suite shares. */
async function buildApp(store: ReturnType<typeof createMemoryStore>) {
  const app = Fastify();
  await app.register(rateLimitPlugin, { limit: 1, window: '1m', store, clock: clockAt(0) });
  app.get('/', ok);
  app.get('/login', { config: { rateLimit: { limit: 5, window: '1m' } } }, ok);
  await app.ready();
  return app;
}

// Closing an app kept its limits' namespaces claimed: the next app built in the process over
// the same store (or the same Redis client) failed with ERR_SLUICE_NAMESPACE_TAKEN.
describe('fastify: an app built again after the last one closed', () => {
  it('takes the namespaces anew, and shares the counts the closed app left', async () => {
    const store = createMemoryStore();
    const first = await buildApp(store);
    expect((await first.inject('/')).statusCode).toBe(200);
    await first.close();

    const second = await buildApp(store);
    try {
      expect((await second.inject('/')).statusCode).toBe(429);
      expect((await second.inject('/login')).statusCode).toBe(200);
    } finally {
      await second.close();
    }
  });

  it('still refuses a second app beside one that is open', async () => {
    const store = createMemoryStore();
    const open = await buildApp(store);
    try {
      await expect(buildApp(store)).rejects.toMatchObject({ code: 'ERR_SLUICE_NAMESPACE_TAKEN' });
    } finally {
      await open.close();
    }
  });
});
