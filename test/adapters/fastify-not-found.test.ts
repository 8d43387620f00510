import { rateLimitPlugin } from '@sluice/fastify';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { clockAt, collectingLogger, parseItems } from './helpers.js';

const base = { algorithm: 'fixed-window', logger: collectingLogger(), clock: clockAt(0) } as const;

/** Status and the `r` of each policy in the RateLimit field. */
async function get(app: FastifyInstance, url: string): Promise<{ status: number; remaining: Record<string, unknown> }> {
  const res = await app.inject({ method: 'GET', url });
  const field = res.headers.ratelimit as string | undefined;
  const items = field === undefined ? [] : parseItems(field);
  return { status: res.statusCode, remaining: Object.fromEntries(items.map((item) => [item.name, item.params.r])) };
}

describe('fastify: the not-found handler', () => {
  let app: FastifyInstance;
  afterEach(() => app.close());

  it('is limited through a custom setNotFoundHandler too, sharing the count of the routes', async () => {
    app = Fastify();
    await app.register(rateLimitPlugin, { ...base, name: 'site', limit: 3, window: '1m' });
    app.setNotFoundHandler((_request, reply) => reply.code(404).send('nothing here'));
    app.get('/', async () => 'ok');
    expect(await get(app, '/missing')).toEqual({ status: 404, remaining: { site: 2 } });
    expect(await get(app, '/')).toEqual({ status: 200, remaining: { site: 1 } });
    expect(await get(app, '/missing')).toEqual({ status: 404, remaining: { site: 0 } });
    expect((await get(app, '/missing')).status).toBe(429);
  });

  it('counts a route that calls reply.callNotFound() once', async () => {
    app = Fastify();
    await app.register(rateLimitPlugin, { ...base, name: 'site', limit: 3, window: '1m' });
    app.get('/gone', async (_request, reply) => reply.callNotFound());
    expect(await get(app, '/gone')).toEqual({ status: 404, remaining: { site: 2 } });
    expect(await get(app, '/gone')).toEqual({ status: 404, remaining: { site: 1 } });
  });

  it('notFound: false leaves it unlimited while routes stay limited', async () => {
    app = Fastify();
    await app.register(rateLimitPlugin, { ...base, name: 'site', limit: 1, window: '1m', notFound: false });
    app.get('/', async () => 'ok');
    for (let i = 0; i < 3; i++) expect(await get(app, '/missing')).toEqual({ status: 404, remaining: {} });
    expect(await get(app, '/')).toEqual({ status: 200, remaining: { site: 0 } });
    expect((await get(app, '/')).status).toBe(429);
  });

  it('global: false leaves it unlimited unless notFound: true asks, on the plugin options', async () => {
    app = Fastify();
    await app.register(rateLimitPlugin, { ...base, name: 'site', limit: 1, window: '1m', global: false });
    for (let i = 0; i < 3; i++) expect((await get(app, '/missing')).status).toBe(404);
    await app.close();

    app = Fastify();
    await app.register(rateLimitPlugin, { ...base, limit: 1, window: '1m', global: false, notFound: true });
    app.get('/open', async () => 'ok');
    expect((await get(app, '/missing')).status).toBe(404);
    expect((await get(app, '/missing')).status).toBe(429);
    expect(await get(app, '/open')).toEqual({ status: 200, remaining: {} });
  });

  it('is limited by a registration in an encapsulated context with its own not-found handler', async () => {
    app = Fastify();
    await app.register(
      async (api) => {
        await api.register(rateLimitPlugin, { ...base, name: 'api', limit: 1, window: '1m' });
        api.setNotFoundHandler((_request, reply) => reply.code(404).send({ error: 'no such endpoint' }));
      },
      { prefix: '/api' },
    );
    expect(await get(app, '/api/missing')).toEqual({ status: 404, remaining: { api: 0 } });
    expect((await get(app, '/api/missing')).status).toBe(429);
    expect(await get(app, '/elsewhere')).toEqual({ status: 404, remaining: {} });
  });

  it("runs in the configured hook: with hook: 'preHandler' a key from auth answers 404, not 500", async () => {
    app = Fastify();
    app.addHook('preHandler', async (request) => {
      (request as unknown as { user: string }).user = String(request.headers['x-user']);
    });
    await app.register(rateLimitPlugin, {
      ...base,
      name: 'site',
      limit: 2,
      window: '1m',
      hook: 'preHandler',
      key: (request) => (request as unknown as { user: string }).user.toUpperCase(),
    });
    const as = (user: string) => app.inject({ method: 'GET', url: '/missing', headers: { 'x-user': user } });
    expect((await as('ada')).statusCode).toBe(404);
    expect((await as('ada')).statusCode).toBe(404);
    expect((await as('ada')).statusCode).toBe(429);
    expect((await as('grace')).statusCode).toBe(404);
  });

  it('refuses a non-boolean notFound', async () => {
    app = Fastify();
    await expect(
      app.register(rateLimitPlugin, { ...base, limit: 1, window: '1m', notFound: 'yes' as never }),
    ).rejects.toMatchObject({ code: 'ERR_SLUICE_INVALID_OPTION', message: expect.stringMatching(/`notFound`/) });
  });
});
