import type { AddressInfo } from 'node:net';
import Router from '@koa/router';
import { rateLimit } from '@sluice/koa';
import { parseRules } from '@sluice/rules';
import Koa from 'koa';
import request from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';
import { clockAt, draft11 } from './helpers.js';

describe('koa: the route descriptor with @koa/router', () => {
  let server: ReturnType<Koa['listen']> | undefined;
  afterEach(async () => {
    await new Promise((resolve) => server?.close(resolve));
  });

  const rules = parseRules(`
domain: api
descriptors:
  - key: route
    value: GET /items/:id
    policies: [{ name: items, limit: 2, window: 1m, algorithm: fixed-window }]
  - key: route
    descriptors:
      - key: remote_address
        policies: [{ name: per-route, limit: 1, window: 1m, algorithm: fixed-window }]
`);
  const loginRules = parseRules(`
domain: api
descriptors:
  - key: route
    value: POST /login
    policies: [{ name: login, limit: 1, window: 1m, algorithm: fixed-window }]
  - key: route
    value: POST /:page
    policies: [{ name: page, limit: 2, window: 1m, algorithm: fixed-window }]
  - key: route
    value: GET /x
    policies: [{ name: x, limit: 1, window: 1m, algorithm: fixed-window }]
  - key: route
    value: GET /{*any}
    policies: [{ name: any, limit: 1, window: 1m, algorithm: fixed-window }]
`);
  const serve = async (router: Router) => {
    const app = new Koa();
    app.use(router.routes());
    server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server?.once('listening', resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  };
  const ok = (ctx: Koa.Context) => {
    ctx.body = 'ok';
  };

  it("a limiter on a router's route sends the matched pattern, so two ids share a counter", async () => {
    const router = new Router();
    router.get('/items/:id', rateLimit({ rules, descriptors: [['route']], clock: clockAt(0) }), ok);
    const url = await serve(router);
    expect(draft11(await request(url).get('/items/1').expect(200)).state.items?.r).toBe(1);
    await request(url).get('/items/2').expect(200);
    await request(url).get('/items/3').expect(429);
  });

  // Regression: inside `router.use`, @koa/router's `ctx._matchedRoute` is the use layer's own
  // path, "(?:\/|$)", so a rule on a route never matched there, and a per-route count was one
  // count for every route.
  it('a limiter given to router.use sends the route the request matched', async () => {
    const router = new Router();
    router.use(rateLimit({ rules, descriptors: [['route']], clock: clockAt(0) }));
    router.get('/items/:id', ok);
    router.get('/other', ok);
    const url = await serve(router);
    expect(draft11(await request(url).get('/items/1').expect(200)).state.items?.r).toBe(1);
    await request(url).get('/items/2').expect(200);
    await request(url).get('/items/3').expect(429);
    await request(url).get('/other').expect(200);
  });

  it('a per-route count under router.use is one per route', async () => {
    const router = new Router();
    router.use(rateLimit({ rules, descriptors: [['route', 'remote_address']], clock: clockAt(0) }));
    router.post('/a', ok);
    router.post('/b/:id', ok);
    const url = await serve(router);
    await request(url).post('/a').expect(200);
    await request(url).post('/b/1').expect(200);
    await request(url).post('/b/2').expect(429);
    await request(url).post('/a').expect(429);
  });

  it("a HEAD request counts under its GET route's rule", async () => {
    const router = new Router();
    router.get('/items/:id', rateLimit({ rules, descriptors: [['route']], clock: clockAt(0) }), ok);
    const url = await serve(router);
    await request(url).head('/items/1').expect(200);
    await request(url).get('/items/2').expect(200);
    await request(url).head('/items/3').expect(429);
  });

  it("a route of HEAD alone, the app's own, counts under HEAD", async () => {
    const headRules = parseRules(`
domain: api
descriptors:
  - key: route
    value: HEAD /items/:id
    policies: [{ name: head, limit: 1, window: 1m, algorithm: fixed-window }]
`);
    const router = new Router();
    router.head('/items/:id', rateLimit({ rules: headRules, descriptors: [['route']], clock: clockAt(0) }), (ctx) => {
      ctx.status = 204;
    });
    const url = await serve(router);
    await request(url).head('/items/1').expect(204);
    await request(url).head('/items/2').expect(429);
  });

  // `ctx.matched` lists the layers of every router the request went through.
  it("in a second router's router.use, the route is that router's", async () => {
    const first = new Router();
    first.get('/items/:id', (_ctx, next) => next());
    const second = new Router();
    second.use(rateLimit({ rules, descriptors: [['route']], clock: clockAt(0) }));
    second.get('/items/special', ok);
    const app = new Koa();
    app.use(first.routes());
    app.use(second.routes());
    server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server?.once('listening', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    // Counted under `GET /items/special` (no rule), never under the first router's `GET /items/:id`.
    for (let i = 0; i < 3; i++) await request(url).get('/items/special').expect(200);
  });

  // The router runs the routes a path matches in order: the first answers unless it passes on.
  it('in router.use, of two routes a path matches, the first is the route', async () => {
    const router = new Router();
    router.use(rateLimit({ rules, descriptors: [['route']], clock: clockAt(0) }));
    router.get('/items/:id', ok);
    router.get('/items/special', ok);
    const url = await serve(router);
    await request(url).get('/items/special').expect(200);
    await request(url).get('/items/special').expect(200);
    await request(url).get('/items/special').expect(429);
  });

  // Regression: a `router.use` layer at a route's path runs under that path, and the route at
  // it was taken for the one answering, though a route before it does.
  it("in router.use at a route's path, the route is the one that answers", async () => {
    const router = new Router();
    router.use('/items/special', rateLimit({ rules, descriptors: [['route']], clock: clockAt(0) }));
    router.get('/items/:id', ok);
    router.get('/items/special', ok);
    const url = await serve(router);
    expect(draft11(await request(url).get('/items/special').expect(200)).state.items?.r).toBe(1);
    await request(url).get('/items/special').expect(200);
    await request(url).get('/items/special').expect(429);
  });

  // Regression: one limiter on a GET and a POST route at one path is in both layers, and a POST
  // found the GET layer first, took it for no route of its method and counted under another.
  it('one limiter on two routes of one path counts under the route of the request method', async () => {
    const router = new Router({ exclusive: true });
    const limiter = rateLimit({ rules: loginRules, descriptors: [['route']], clock: clockAt(0) });
    router.post('/:page', ok);
    router.get('/login', limiter, ok);
    router.post('/login', limiter, ok);
    const url = await serve(router);
    await request(url).post('/login').expect(200);
    await request(url).post('/login').expect(429);
    await request(url).get('/login').expect(200);
  });

  /** Three POSTs to /login: the first passes, the rest meet the rule on `POST /login`. */
  const loginCounted = async (router: Router) => {
    const url = await serve(router);
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await request(url).post('/login')).status);
    return statuses;
  };
  const pass = (_ctx: Koa.Context, next: Koa.Next) => next();

  // Regressions: the use layer holding the limiter was taken for the running one on an exclusive
  // router, which runs its last layer alone; and the route holding it for the running one on
  // another, where the use layer meets the request first and the route after it answers.
  it('one limiter in router.use and on the route at its path counts where it runs', async () => {
    for (const exclusive of [true, false]) {
      const router = new Router({ exclusive });
      const limiter = rateLimit({ rules: loginRules, descriptors: [['route']], clock: clockAt(0) });
      router.use('/login', limiter);
      router.post('/:page', ok);
      router.post('/login', limiter, ok);
      // `POST /login` allows 1, `POST /:page` 2.
      const expected = exclusive ? [200, 429, 429] : [200, 200, 429];
      expect([exclusive, await loginCounted(router)]).toEqual([exclusive, expected]);
      await new Promise((resolve) => server?.close(resolve));
    }
  });

  // Regression: a fallback route that passes the request on and answers on its way back, before
  // a `router.use` with no route after it, counted under no route.
  // Regression: of a guard on every path and a fallback at the use layer's own path, both
  // passing the request on, the guard was taken.
  it('in router.use with no route after it, a route before it at its own path counts', async () => {
    const router = new Router();
    router.post('/{*any}', pass);
    router.post('/login', async (ctx, next) => {
      await next();
      ctx.body ??= 'stored';
    });
    router.use('/login', rateLimit({ rules: loginRules, descriptors: [['route']], clock: clockAt(0) }));
    expect(await loginCounted(router)).toEqual([200, 429, 429]);
  });

  it('in router.use with no route after it, the route before it that passed the request on counts', async () => {
    const router = new Router();
    router.get('/{*any}', async (ctx, next) => {
      await next();
      ctx.body ??= 'fallback';
    });
    router.use(rateLimit({ rules: loginRules, descriptors: [['route']], clock: clockAt(0) }));
    router.get('/login', ok);
    const url = await serve(router);
    await request(url).get('/other').expect(200);
    await request(url).get('/other').expect(429);
  });

  it('in router.use after a route that passes the request on, the route is the one after it', async () => {
    for (const at of ['/login', undefined]) {
      const router = new Router();
      const limiter = rateLimit({ rules: loginRules, descriptors: [['route']], clock: clockAt(0) });
      router.all('/{*any}', pass);
      if (at === undefined) router.use(limiter);
      else router.use(at, limiter);
      router.post('/login', ok);
      expect([at, await loginCounted(router)]).toEqual([at, [200, 429, 429]]);
      await new Promise((resolve) => server?.close(resolve));
    }
  });

  // `exclusive: true` runs the last layer alone: a HEAD request goes to the GET route after it.
  it('on an exclusive router, a HEAD and a GET route sharing a limiter count under the one that runs', async () => {
    const router = new Router({ exclusive: true });
    const limiter = rateLimit({ rules: loginRules, descriptors: [['route']], clock: clockAt(0) });
    router.head('/x', limiter, (ctx) => {
      ctx.status = 204;
    });
    router.get('/x', limiter, ok);
    const url = await serve(router);
    await request(url).head('/x').expect(200);
    await request(url).head('/x').expect(429);
  });

  it('a limiter given to router.use at a RegExp counts under the route that answers', async () => {
    const router = new Router();
    router.use(/^\/items/, rateLimit({ rules, descriptors: [['route']], clock: clockAt(0) }));
    router.get('/items/:id', ok);
    const url = await serve(router);
    await request(url).get('/items/1').expect(200);
    await request(url).get('/items/2').expect(200);
    await request(url).get('/items/3').expect(429);
  });

  // A limiter wrapped in another function is in no layer: the route at the running path counts.
  it('a limiter wrapped in a route-level function counts under that route', async () => {
    const router = new Router();
    const limiter = rateLimit({ rules, descriptors: [['route']], clock: clockAt(0) });
    router.get('/items/:id', (ctx, next) => limiter(ctx, next), ok);
    const url = await serve(router);
    await request(url).get('/items/1').expect(200);
    await request(url).get('/items/2').expect(200);
    await request(url).get('/items/3').expect(429);
  });

  // A route given as a RegExp has no pattern: its limiter is no other route's.
  it('a limiter on a RegExp route counts under no route, in router.use too', async () => {
    for (const mounted of ['route', 'use'] as const) {
      const router = new Router();
      const limiter = rateLimit({ rules, descriptors: [['route']], clock: clockAt(0) });
      if (mounted === 'use') router.use(limiter);
      router.get(/^\/items\/.*\.txt$/, ...(mounted === 'route' ? [limiter] : []), ok);
      router.get('/items/:id', ok);
      const url = await serve(router);
      for (let i = 0; i < 3; i++) await request(url).get(`/items/${i}.txt`).expect(200);
      await new Promise((resolve) => server?.close(resolve));
    }
  });

  // A request two routes match runs both routes' middleware, each under its own pattern.
  it('a limiter on the first of two routes a path matches counts under its own pattern', async () => {
    const router = new Router();
    router.get('/items/:id', rateLimit({ rules, descriptors: [['route']], clock: clockAt(0) }), (_ctx, next) => next());
    router.get('/items/special', ok);
    const url = await serve(router);
    expect(draft11(await request(url).get('/items/special').expect(200)).state.items?.r).toBe(1);
  });
});
