import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { rateLimit } from '@sluice/express';
import { parseRules } from '@sluice/rules';
import express, { type RequestHandler } from 'express';
import express4 from 'express4';
import request from 'supertest';
import { afterEach, describe, it } from 'vitest';
import { clockAt } from './helpers.js';

const rules = parseRules(`
domain: api
descriptors:
  - key: route
    value: GET /api/login
    policies: [{ name: login, limit: 2, window: 1m, algorithm: fixed-window }]
  - key: route
    value: GET /tenants/:tid/users/:id
    policies: [{ name: users, limit: 2, window: 1m, algorithm: fixed-window }]
  - key: route
    value: GET /a
    policies: [{ name: a, limit: 1, window: 1m, algorithm: fixed-window }]
  - key: route
    value: GET /v1/api/login
    policies: [{ name: v1-login, limit: 1, window: 1m, algorithm: fixed-window }]
  - key: route
    value: GET /api/v:version/login
    policies: [{ name: versioned, limit: 1, window: 1m, algorithm: fixed-window }]
  - key: route
    value: HEAD /x
    policies: [{ name: head-x, limit: 1, window: 1m, algorithm: fixed-window }]
  - key: route
    value: GET /x
    policies: [{ name: get-x, limit: 1, window: 1m, algorithm: fixed-window }]
  - key: route
    value: GET {/v1}/login
    policies: [{ name: optional-v1, limit: 1, window: 1m, algorithm: fixed-window }]
`);
const ok: RequestHandler = (_req, res) => {
  res.send('ok');
};
const limiter = () => rateLimit({ rules, descriptors: [['route']], clock: clockAt(0) });
/** A router with one limited route, `GET /login`. */
const loginRouter = () => express.Router().get('/login', limiter(), ok);

// Express matches a mount path regardless of case, and `req.baseUrl` is the URL as sent: the
// route under a router was `baseUrl + route.path`, so `/API/login` escaped a rule on
// `GET /api/login`, and a mount path's parameter came in as its value.
describe('express: the route pattern under routers', () => {
  let server: Server | undefined;
  afterEach(async () => {
    await new Promise((resolve) => server?.close(resolve));
  });
  const serve = async (app: express.Express) => {
    server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server?.once('listening', resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  };

  it('a mount path in another case counts under the route as written', async () => {
    const router = loginRouter();
    const app = express();
    app.use('/api', router);
    const url = await serve(app);
    await request(url).get('/api/login').expect(200);
    await request(url).get('/API/login').expect(200);
    await request(url).get('/Api/login').expect(429);
  });

  it("a mount path's parameter is its name, not its value", async () => {
    const router = express.Router();
    router.get('/users/:id', limiter(), ok);
    const app = express();
    app.use('/tenants/:tid', router);
    const url = await serve(app);
    await request(url).get('/tenants/1/users/1').expect(200);
    await request(url).get('/tenants/2/users/2').expect(200);
    await request(url).get('/tenants/3/users/3').expect(429);
  });

  it('a sub-app and a router inside it: both mount paths as written', async () => {
    const router = loginRouter();
    const sub = express();
    sub.use('/api', router);
    const app = express();
    app.use('/v1', sub);
    const url = await serve(app);
    await request(url).get('/V1/API/login').expect(200);
    await request(url).get('/v1/api/login').expect(429);
  });

  // Express's router gave such a route its list as `route.path`, and sluice no route at all.
  it('a route given several paths reports the one the request matched', async () => {
    const app = express();
    app.get(['/a', '/b'], limiter(), ok);
    const url = await serve(app);
    await request(url).get('/a').expect(200);
    await request(url).get('/a').expect(429);
    // `GET /b` has no rule.
    await request(url).get('/b').expect(200);
    await request(url).get('/b').expect(200);
  });

  // A HEAD request runs the GET route's handler: it counts there, not under a route of its own.
  it("a HEAD request counts under its GET route's rule", async () => {
    const router = loginRouter();
    const app = express();
    app.use('/api', router);
    const url = await serve(app);
    await request(url).head('/api/login').expect(200);
    await request(url).get('/api/login').expect(200);
    await request(url).head('/api/login').expect(429);
  });

  it('a parameter inside a mount segment is its name, not its value', async () => {
    const router = loginRouter();
    const app = express();
    app.use('/api/v:version', router);
    const url = await serve(app);
    await request(url).get('/api/v1/login').expect(200);
    await request(url).get('/api/v2/login').expect(429);
  });

  // Express flattens a nested list of paths; the matched one is read from the list flattened.
  it('a route given a nested list of paths reports the one matched', async () => {
    const app = express();
    // Express's types allow no nesting, which Express itself takes.
    app.get([['/b', '/a'], '/c'] as unknown as string[], limiter(), ok);
    const url = await serve(app);
    await request(url).get('/a').expect(200);
    await request(url).get('/a').expect(429);
    await request(url).get('/b').expect(200);
    await request(url).get('/c').expect(200);
  });

  it('a router mounted in itself answers at once', async () => {
    const router = express.Router();
    router.use('/a', router);
    router.use('/b', router);
    router.get('/login', limiter(), ok);
    const app = express();
    app.use('/api', router);
    const url = await serve(app);
    await request(url).get('/api/login').expect(200);
    // Through the router again, below itself: no place the tree tells for sure, the URL's text.
    await request(url).get('/api/a/login').expect(200);
    await request(url).get('/API/login').expect(200);
    await request(url).get('/Api/login').expect(429);
  });

  // An explicit HEAD handler answers HEAD itself: its requests are no GET route's.
  it("a route's own HEAD handler counts under HEAD", async () => {
    const app = express();
    app.head('/x', limiter(), (_req, res) => {
      res.end();
    });
    app.get('/x', limiter(), ok);
    const url = await serve(app);
    await request(url).head('/x').expect(200);
    await request(url).get('/x').expect(200);
    await request(url).head('/x').expect(429);
    await request(url).get('/x').expect(429);
  });

  // Express 4 keeps its router as `_router` (reading `app.router` throws) and no pattern of a
  // mount: the mount part is the URL's, as before, and nothing throws into the request.
  it('on Express 4, a route under a router keeps the mount part as sent', async () => {
    const router = express4.Router();
    router.get('/login', limiter(), ok);
    const app = express4();
    app.use('/api', router);
    app.get(['/a', '/b'], limiter(), ok);
    server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server?.once('listening', resolve));
    const url = `http://127.0.0.1:${((server as Server).address() as AddressInfo).port}`;
    await request(url).get('/api/login').expect(200);
    await request(url).get('/api/login').expect(200);
    await request(url).get('/api/login').expect(429);
    // A route given a list of paths under Express 4: no route, no rule, no error.
    for (let i = 0; i < 2; i++) await request(url).get('/a').expect(200);
  });

  // A router mounted at `/` takes nothing of the path: Express matches it apart (`slash`).
  it('a router mounted at / between the app and the route adds nothing', async () => {
    const users = express.Router();
    users.get('/login', limiter(), ok);
    const root = express.Router();
    root.use('/api', users);
    const app = express();
    app.use(root);
    const url = await serve(app);
    await request(url).get('/api/login').expect(200);
    await request(url).get('/API/login').expect(200);
    await request(url).get('/Api/login').expect(429);
  });

  it("an app.all route answers HEAD with its handler: HEAD counts under GET's rule", async () => {
    const app = express();
    app.all('/x', limiter(), ok);
    const url = await serve(app);
    await request(url).get('/x').expect(200);
    await request(url).head('/x').expect(429);
  });

  // The places are read per app: a router two apps share has a place in each.
  it('a router two apps share counts under each app its own mount', async () => {
    const router = loginRouter();
    const first = express();
    first.use('/api', router);
    const second = express();
    second.use('/:tenant/api', router);
    const url = await serve(second);
    await request(url).get('/acme/api/login').expect(200);
    const other = first.listen(0, '127.0.0.1');
    await new Promise((resolve) => other.once('listening', resolve));
    try {
      const firstUrl = `http://127.0.0.1:${(other.address() as AddressInfo).port}`;
      await request(firstUrl).get('/API/login').expect(200);
      await request(firstUrl).get('/api/login').expect(200);
      await request(firstUrl).get('/Api/login').expect(429);
    } finally {
      await new Promise((resolve) => other.close(resolve));
    }
  });

  it('a router of 20,000 routes leaves a route under another router its pattern', async () => {
    const many = express.Router();
    for (let i = 0; i < 20_000; i++) many.get(`/r${i}`, ok);
    const router = loginRouter();
    const app = express();
    app.use('/many', many);
    app.use('/api', router);
    const url = await serve(app);
    await request(url).get('/API/login').expect(200);
    await request(url).get('/api/login').expect(200);
    await request(url).get('/Api/login').expect(429);
  });

  // Outside the tree, the URL's mount part is read in one case: its case is no way around a rule.
  it('a router reached through a function counts every case of its mount as one', async () => {
    const router = loginRouter();
    const app = express();
    app.use('/api', (req, res, next) => router(req, res, next));
    const url = await serve(app);
    await request(url).get('/API/login').expect(200);
    await request(url).get('/aPi/login').expect(200);
    await request(url).get('/api/login').expect(429);
  });

  // A mount that may match nothing leaves `req.baseUrl` empty: the tree still names it.
  it('a mount that matched nothing still reads as its pattern', async () => {
    const router = loginRouter();
    const app = express();
    app.use('{/v1}', router);
    const url = await serve(app);
    await request(url).get('/v1/login').expect(200);
    await request(url).get('/login').expect(429);
  });

  // The tree cannot say which of two mounts the request came through: the URL's text is the key.
  it('a router mounted at two paths keeps the mount part as sent', async () => {
    const router = loginRouter();
    const app = express();
    app.use('/api', router);
    app.use('/other', router);
    const url = await serve(app);
    for (let i = 0; i < 3; i++) await request(url).get('/other/login').expect(200);
    await request(url).get('/api/login').expect(200);
    await request(url).get('/api/login').expect(200);
    await request(url).get('/api/login').expect(429);
  });
});
