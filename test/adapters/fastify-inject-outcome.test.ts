import { rateLimitPlugin } from '@sluice/fastify';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';

/** Turns of the event loop for a response's `close` and the refund after it. */
const settled = async () => {
  for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
};

// Fastify's `inject` (light-my-request) ends a response without its `writableFinished` ever
// turning true, so every injected request stayed counted: tests of these options failed.
describe.each([
  ['skipFailedRequests', 500],
  ['skipSuccessfulRequests', 200],
] as const)('%s under app.inject()', (option, status) => {
  it('gives the charge back as over a socket', async () => {
    const app = Fastify();
    await app.register(rateLimitPlugin, { limit: 2, window: '1m', [option]: true });
    app.get('/', async (_request, reply) => reply.code(status).send('done'));
    app.get('/other', async (_request, reply) => reply.code(status === 500 ? 200 : 500).send('done'));
    try {
      for (let i = 0; i < 4; i++) {
        expect((await app.inject('/')).statusCode).toBe(status);
        await settled();
      }
      // The other outcome stays counted.
      expect((await app.inject('/other')).statusCode).not.toBe(429);
      await settled();
      expect((await app.inject('/other')).statusCode).not.toBe(429);
      await settled();
      expect((await app.inject('/other')).statusCode).toBe(429);
    } finally {
      await app.close();
    }
  });
});
