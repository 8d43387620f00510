import { type OnLimited, rateLimitPlugin } from '@sluice/fastify';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { clockAt, collectingLogger } from './helpers.js';

const base = { algorithm: 'fixed-window', limit: 1, window: '1m', logger: collectingLogger() } as const;

describe('fastify: a refusal answered by onLimited', () => {
  let app: FastifyInstance;
  afterEach(() => app.close());

  /** An app whose one route counts the requests its handler served; its second request is refused. */
  async function refusedBy(onLimited: OnLimited, logLines: string[] = []) {
    let served = 0;
    app = Fastify({ logger: { level: 'error', stream: { write: (line: string) => logLines.push(line) } } });
    await app.register(rateLimitPlugin, { ...base, clock: clockAt(0), onLimited });
    app.post('/login', async () => {
      served++;
      return { loggedIn: true };
    });
    await app.inject({ method: 'POST', url: '/login' });
    const res = await app.inject({ method: 'POST', url: '/login' });
    return { res, served };
  }

  it('never reaches the handler when onLimited returns a body instead of sending (it failed open)', async () => {
    const { res, served } = await refusedBy(async () => ({ error: 'slow down' }));
    expect(served).toBe(1);
    expect(res.statusCode).toBe(429);
    expect(res.json()).toEqual({ error: 'slow down' });
    expect(res.headers['retry-after']).toBe('60');
  });

  it('keeps the status onLimited set with the body it returns', async () => {
    const { res, served } = await refusedBy(async (_request, reply) => {
      reply.code(503);
      return 'busy';
    });
    expect(served).toBe(1);
    expect([res.statusCode, res.body]).toEqual([503, 'busy']);
  });

  it('sends the default refusal when onLimited neither sends nor returns anything', async () => {
    const { res, served } = await refusedBy(() => undefined);
    expect(served).toBe(1);
    expect(res.statusCode).toBe(429);
    expect(res.headers['content-type']).toBe('application/problem+json; charset=utf-8');
    expect(res.json()).toMatchObject({ status: 429, 'violated-policies': ['1-per-1m'] });
  });

  it('leaves a reply onLimited sent as it is', async () => {
    const { res, served } = await refusedBy((_request, reply) => reply.code(418).send('teapot'));
    expect(served).toBe(1);
    expect([res.statusCode, res.body]).toEqual([418, 'teapot']);
  });

  it.each([
    [
      'at once',
      ((_request, reply) => {
        reply.code(418).send('teapot');
        throw new Error('failed after sending');
      }) as OnLimited,
    ],
    [
      'later',
      (async (_request, reply) => {
        reply.code(418).send('teapot');
        await Promise.resolve();
        throw new Error('failed after sending');
      }) as OnLimited,
    ],
  ])(
    'logs what onLimited throws %s after sending, as Fastify logs a handler that does (it was dropped unseen)',
    async (_, onLimited) => {
      const logLines: string[] = [];
      const { res, served } = await refusedBy(onLimited, logLines);
      expect(served).toBe(1);
      expect([res.statusCode, res.body]).toEqual([418, 'teapot']);
      const logged = logLines.map((line) => JSON.parse(line));
      expect(logged).toMatchObject([{ level: 50, err: { message: 'failed after sending' } }]);
    },
  );
});
