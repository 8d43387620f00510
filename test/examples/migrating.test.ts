import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';
import { createApp as fromExpressRateLimit } from '../../examples/migrating/src/from-express-rate-limit.js';
import { createApp as fromFastifyRateLimit } from '../../examples/migrating/src/from-fastify-rate-limit.js';
import { createApp as fromKoaRatelimit } from '../../examples/migrating/src/from-koa-ratelimit.js';
import { createApp as fromRateLimiterFlexible } from '../../examples/migrating/src/from-rate-limiter-flexible.js';
import { listen } from '../adapters/harness/listen.js';
import { clockAt } from '../adapters/helpers.js';

/** The "after" example of each guide in docs/migrating, run over real HTTP. */
describe('migration guides: the examples behave as their guides say', () => {
  let close: (() => Promise<void>) | undefined;
  afterEach(() => close?.());
  const clock = clockAt(0);

  it('express-rate-limit: failed API calls are free, failed logins count, a good password clears them', async () => {
    const app = await listen(
      fromExpressRateLimit({ clock }),
      () => 0,
      () => [],
    );
    close = app.close;
    for (let i = 0; i < 3; i++) await request(app.url).get('/api/missing').expect(404);
    const ok = await request(app.url).get('/api/items').expect(200);
    expect(ok.headers.ratelimit).toMatch(/r=99/);
    const login = (password: string) => request(app.url).post(`/login?user=ada&password=${password}`);
    expect((await login('nope').expect(401)).body.attemptsLeft).toBe(4);
    await login('nope').expect(401);
    await login('secret').expect(200);
    expect((await login('nope').expect(401)).body.attemptsLeft).toBe(4);
  });

  it('express-rate-limit: the refusal is the plain-text message', async () => {
    const app = await listen(
      fromExpressRateLimit({ clock }),
      () => 0,
      () => [],
    );
    close = app.close;
    for (let i = 0; i < 100; i++) await request(app.url).get('/api/items').expect(200);
    const refused = await request(app.url).get('/api/items').expect(429);
    expect(refused.text).toBe('Too many requests, please try again later.');
  });

  it('@fastify/rate-limit: per plan after auth, allow list, ban, own route limit, shared counts', async () => {
    const app = await fromFastifyRateLimit({ clock });
    await app.listen({ port: 0, host: '127.0.0.1' });
    close = () => app.close();
    const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    const as = (token: string) => ({ authorization: `Bearer ${token}` });
    expect((await request(url).get('/search').set(as('pro-1')).expect(200)).body).toEqual({
      user: 'pro-1',
      remaining: 9,
    });
    for (let i = 0; i < 3; i++) await request(url).get('/search').set(as('ada')).expect(200);
    for (let i = 0; i < 3; i++) await request(url).get('/search').set(as('ada')).expect(429);
    await request(url).get('/search').set(as('ada')).expect(403);
    for (let i = 0; i < 5; i++) await request(url).get('/search').set(as('monitoring')).expect(200);
    expect(app.exceeded).toEqual(['ada', 'ada', 'ada', 'ada']);
    await request(url).post('/reports').set(as('grace')).expect(200);
    await request(url).post('/reports').set(as('grace')).expect(429);
    await request(url).post('/login').set(as('grace')).expect(200);
    await request(url).post('/signup').set(as('grace')).expect(200);
    await request(url).post('/login').set(as('grace')).expect(429);
  });

  it('rate-limiter-flexible: consume with a cost, peek, refund and reset by hand', async () => {
    const app = await listen(
      fromRateLimiterFlexible({ clock }),
      () => 0,
      () => [],
    );
    close = app.close;
    expect((await request(app.url).get('/export').expect(200)).body).toEqual({ remainingPoints: 5 });
    await request(app.url).get('/export').expect(200);
    const refused = await request(app.url).get('/export').expect(429);
    // A fixed window, as rate-limiter-flexible counts: the quota is back when the second ends.
    expect(refused.headers['retry-after']).toBe('1');
    // The refusal spent nothing.
    expect((await request(app.url).get('/quota').expect(200)).body.remainingPoints).toBe(0);
    await request(app.url).post('/refund').expect(204);
    expect((await request(app.url).get('/quota').expect(200)).body.remainingPoints).toBe(5);
    await request(app.url).delete('/quota').expect(204);
    expect((await request(app.url).get('/quota').expect(200)).body).toEqual({ remainingPoints: 10, msBeforeNext: 0 });
  });

  it('koa-ratelimit: allow list, legacy fields, message, and a ban after repeated refusals', async () => {
    const server = createServer(fromKoaRatelimit({ clock }).callback());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    close = () => new Promise((resolve) => server.close(() => resolve()));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    for (let i = 0; i < 5; i++) await request(url).get('/').set('x-internal', '1').expect(200);
    const first = await request(url).get('/').expect(200);
    expect(first.headers['x-ratelimit-remaining']).toBe('2');
    await request(url).get('/').expect(200);
    await request(url).get('/').expect(200);
    for (let i = 0; i < 2; i++)
      expect((await request(url).get('/').expect(429)).text).toBe('Sometimes You Just Have to Slow Down.');
    expect((await request(url).get('/').expect(403)).headers['retry-after']).toBe('3600');
    server.closeAllConnections();
  });
});
