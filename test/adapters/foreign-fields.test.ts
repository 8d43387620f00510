import { rateLimit as expressRateLimit } from '@sluice/express';
import { rateLimit as koaRateLimit } from '@sluice/koa';
import express from 'express';
import Koa from 'koa';
import request from 'supertest';
import { describe, expect, it } from 'vitest';

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
});
