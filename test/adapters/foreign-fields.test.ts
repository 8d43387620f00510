import { rateLimit as expressRateLimit } from '@sluice/express';
import { rateLimitPlugin } from '@sluice/fastify';
import { rateLimit as koaRateLimit } from '@sluice/koa';
import express from 'express';
import Fastify from 'fastify';
import Koa from 'koa';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { parseItems } from './helpers.js';

// SPEC §5: items of several limiters on one request are appended, never overwritten; that
// holds for a field another middleware (a gateway's limiter) set before sluice too.
const foreign = 'edge;q=1000;w=60';
describe('a RateLimit field set before sluice', () => {
  it('Express: keeps the earlier item and appends sluice’s', async () => {
    const app = express();
    app.use((_req, res, next) => {
      res.setHeader('RateLimit-Policy', foreign);
      next();
    });
    app.use(expressRateLimit({ limit: 5, window: '1m' }));
    app.get('/', (_req, res) => res.end('ok'));
    const response = await request(app).get('/');
    expect(response.headers['ratelimit-policy']).toContain('edge;q=1000;w=60');
  });
  // Regression: Node's `appendHeader` pushed sluice's item into the array the app had set, a
  // constant here: each response carried one more copy of sluice's item than the last.
  it('Express: leaves a list the app set as it was', async () => {
    const upstream = ['"upstream";q=1000;w=3600'];
    const app = express();
    app.use((_req, res, next) => {
      res.setHeader('RateLimit-Policy', upstream);
      next();
    });
    app.use(expressRateLimit({ limit: 5, window: '1m' }));
    app.get('/', (_req, res) => res.end('ok'));
    for (let i = 0; i < 3; i++) {
      const response = await request(app).get('/');
      expect(parseItems(response.headers['ratelimit-policy'] as string).map((item) => item.name)).toEqual([
        'upstream',
        '5-per-1m',
      ]);
    }
    expect(upstream).toEqual(['"upstream";q=1000;w=3600']);
  });
  it('Koa: keeps the earlier item and appends sluice’s', async () => {
    const app = new Koa();
    app.use((ctx, next) => {
      ctx.set('RateLimit-Policy', foreign);
      return next();
    });
    app.use(koaRateLimit({ limit: 5, window: '1m' }));
    app.use((ctx) => {
      ctx.body = 'ok';
    });
    const response = await request(app.callback()).get('/');
    expect(response.headers['ratelimit-policy']).toContain('edge;q=1000;w=60');
  });
  it('Fastify: keeps the earlier items and appends sluice’s, though no sluice limiter ran before', async () => {
    const app = Fastify();
    app.addHook('onRequest', async (_request, reply) => {
      reply.header('RateLimit-Policy', '"edge";q=1000;w=60');
      reply.header('RateLimit', '"edge";r=999;t=60');
    });
    await app.register(rateLimitPlugin, { name: 'site', limit: 5, window: '1m' });
    app.get('/', async () => 'ok');
    const response = await app.inject({ method: 'GET', url: '/' });
    await app.close();
    const names = (field: unknown) => parseItems(field as string).map((item) => item.name);
    expect(names(response.headers['ratelimit-policy'])).toEqual(['edge', 'site']);
    expect(names(response.headers.ratelimit)).toEqual(['edge', 'site']);
  });
});
