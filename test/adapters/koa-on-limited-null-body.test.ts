import type { AddressInfo } from 'node:net';
import { type RateLimitOptions, rateLimit } from '@sluice/koa';
import Koa from 'koa';
import request from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';
import { clockAt, collectingLogger } from './helpers.js';

// Regression: Koa answers a null body with 204 No Content, so an `onLimited` that set
// `ctx.body = null` turned a refusal into a success with nothing to say why.
describe('koa: onLimited setting ctx.body = null', () => {
  let server: ReturnType<Koa['listen']> | undefined;
  afterEach(async () => {
    await new Promise((resolve) => server?.close(resolve));
  });

  async function refusedBy(options: Partial<RateLimitOptions>) {
    const app = new Koa();
    const base = { algorithm: 'fixed-window', limit: 1, window: '1m', logger: collectingLogger(), clock: clockAt(0) };
    app.use(rateLimit({ ...base, ...options } as RateLimitOptions));
    app.use((ctx) => {
      ctx.body = 'ok';
    });
    server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server?.once('listening', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    await request(url).get('/').expect(200);
    return request(url).get('/');
  }

  it('keeps the 429 and sends the problem document', async () => {
    const res = await refusedBy({
      onLimited: (ctx) => {
        ctx.body = null;
      },
    });
    expect(res.status).toBe(429);
    expect(JSON.parse(res.text)).toMatchObject({ status: 429 });
    expect(res.headers['retry-after']).toBe('60');
  });

  it('keeps the 429 after an async onLimited', async () => {
    const res = await refusedBy({
      onLimited: async (ctx) => {
        await Promise.resolve();
        ctx.body = null;
      },
    });
    expect(res.status).toBe(429);
    expect(JSON.parse(res.text)).toMatchObject({ status: 429 });
  });

  // Another library's promise was not awaited: the problem document went out before the
  // body `onLimited` set once it resolved.
  it('waits for an onLimited that answers with a thenable', async () => {
    const res = await refusedBy({
      onLimited: (ctx) =>
        ({
          // biome-ignore lint/suspicious/noThenProperty: a thenable is what the test hands over.
          then(resolve: () => void) {
            setImmediate(() => {
              ctx.body = 'slow down';
              resolve();
            });
          },
        }) as never,
    });
    expect([res.status, res.text]).toEqual([429, 'slow down']);
  });

  it("keeps a ban's status", async () => {
    const res = await refusedBy({
      ban: { after: 0, duration: '1h' },
      onLimited: (ctx) => {
        ctx.body = null;
      },
    });
    expect(res.status).toBe(403);
    expect(JSON.parse(res.text)).toMatchObject({ status: 403 });
  });
});
