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

  it("a limiter on a router's route sends the matched pattern, so two ids share a counter", async () => {
    const rules = parseRules(`
domain: api
descriptors:
  - key: route
    value: GET /items/:id
    policies: [{ name: items, limit: 2, window: 1m, algorithm: fixed-window }]
`);
    const router = new Router();
    router.get('/items/:id', rateLimit({ rules, descriptors: [['route']], clock: clockAt(0) }), (ctx) => {
      ctx.body = 'ok';
    });
    const app = new Koa();
    app.use(router.routes());
    server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server?.once('listening', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    expect(draft11(await request(url).get('/items/1').expect(200)).state.items?.r).toBe(1);
    await request(url).get('/items/2').expect(200);
    await request(url).get('/items/3').expect(429);
  });
});
