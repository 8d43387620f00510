import { rateLimitPlugin } from '@sluice/fastify';
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import request from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';
import { clockAt, collectingLogger, decisionOf } from './helpers.js';

const base = { algorithm: 'fixed-window', logger: collectingLogger(), clock: clockAt(0) } as const;

declare module 'fastify' {
  interface FastifyRequest {
    user?: string | undefined;
  }
}

/** An app whose auth runs in preValidation (as @fastify/jwt users often do), then the limit. */
async function appWithAuth(options: Record<string, unknown>): Promise<FastifyInstance> {
  const app = Fastify();
  app.addHook('preValidation', async (request: FastifyRequest) => {
    request.user = request.headers.authorization?.replace('Bearer ', '');
  });
  await app.register(rateLimitPlugin, { ...base, limit: 1, window: '1m', ...options } as never);
  app.get('/', async (request) => ({ decision: request.rateLimit }));
  app.get('/own', { config: { rateLimit: { limit: 2, window: '1m', hook: 'preHandler' } } }, async (request) => ({
    decision: request.rateLimit,
  }));
  await app.listen({ port: 0, host: '127.0.0.1' });
  return app;
}

const urlOf = (app: FastifyInstance) => {
  const address = app.server.address();
  return typeof address === 'object' && address !== null ? `http://127.0.0.1:${address.port}` : '';
};

describe('fastify: the hook a limit runs in, and errors naming their route', () => {
  let app: FastifyInstance | undefined;
  afterEach(() => app?.close());
  const key = (request: FastifyRequest) => request.user ?? 'anonymous';

  it("keys by the authenticated user with hook: 'preHandler'", async () => {
    app = await appWithAuth({ key, hook: 'preHandler' });
    const url = urlOf(app);
    const res = await request(url).get('/').set('authorization', 'Bearer ada').expect(200);
    expect(decisionOf(res).key).toBe('ada');
    await request(url).get('/').set('authorization', 'Bearer ada').expect(429);
    await request(url).get('/').set('authorization', 'Bearer grace').expect(200);
  });

  it('runs in onRequest by default, before auth: every user shares the anonymous key', async () => {
    app = await appWithAuth({ key });
    const url = urlOf(app);
    expect(decisionOf(await request(url).get('/').set('authorization', 'Bearer ada').expect(200)).key).toBe(
      'anonymous',
    );
    await request(url).get('/').set('authorization', 'Bearer grace').expect(429);
  });

  it('takes hook per route, and passes the body on from preParsing', async () => {
    app = await appWithAuth({ key });
    const url = urlOf(app);
    const res = await request(url).get('/own').set('authorization', 'Bearer ada').expect(200);
    expect(decisionOf(res)).toMatchObject({ key: 'ada', limit: 2 });
    await app.close();
    app = Fastify();
    await app.register(rateLimitPlugin, { ...base, limit: 1, window: '1m', hook: 'preParsing' });
    app.post('/echo', async (request) => request.body);
    await app.listen({ port: 0, host: '127.0.0.1' });
    expect((await request(urlOf(app)).post('/echo').send({ a: 1 }).expect(200)).body).toEqual({ a: 1 });
    await request(urlOf(app)).post('/echo').send({ a: 1 }).expect(429);
  });

  it('rejects an unknown hook at registration', async () => {
    app = Fastify();
    await expect(app.register(rateLimitPlugin, { limit: 1, window: '1m', hook: 'onSend' } as never)).rejects.toThrow(
      expect.objectContaining({
        code: 'ERR_SLUICE_INVALID_OPTION',
        message: expect.stringMatching(/`hook`.*"onSend"/),
      }),
    );
  });

  it('names the route whose config.rateLimit is wrong, listing every unknown option', async () => {
    app = Fastify();
    await app.register(rateLimitPlugin, { limit: 5, window: '1m' });
    const error = await (async () => {
      app.get('/login', { config: { rateLimit: { max: 1, timeWindow: 1000 } as never } }, async () => 'ok');
      await app.ready();
    })().catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'ERR_SLUICE_UNKNOWN_OPTION' });
    expect((error as Error).message).toBe(
      '[sluice] config.rateLimit of GET /login: Unknown options: `max` (did you mean `limit`?), `timeWindow` (did you mean `window`?).',
    );
  });

  it("hands application code a route's own limiter through app.rateLimiter.route", async () => {
    app = Fastify();
    await app.register(rateLimitPlugin, { ...base, limit: 5, window: '1m', global: false });
    app.post('/login', { config: { rateLimit: { limit: 2, window: '1m' } } }, async () => 'ok');
    await app.listen({ port: 0, host: '127.0.0.1' });
    const url = urlOf(app);
    expect(app.rateLimiter.limiter).toBeUndefined();
    const login = app.rateLimiter.route('post', '/login')?.limiter;
    await request(url).post('/login').expect(200);
    await request(url).post('/login').expect(200);
    await request(url).post('/login').expect(429);
    expect(await login?.peek('127.0.0.1')).toMatchObject({ allowed: false, remaining: 0 });
    await login?.reset('127.0.0.1');
    await request(url).post('/login').expect(200);
    expect(app.rateLimiter.route('GET', '/login')).toBeUndefined();
  });
});
