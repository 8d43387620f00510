import type { AddressInfo } from 'node:net';
import { type RateLimitOptions, rateLimit } from '@sluice/koa';
import Koa from 'koa';
import request from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';
import { clockAt, collectingLogger } from './helpers.js';

const base = { algorithm: 'fixed-window', limit: 1, window: '1m', logger: collectingLogger() } as const;

describe('koa: a refusal answered by onLimited', () => {
  let server: ReturnType<Koa['listen']> | undefined;
  afterEach(async () => {
    await new Promise((resolve) => server?.close(resolve));
  });

  /** An app whose handler counts what it served; the second request is refused and answered by `onLimited`. */
  async function refusedBy(onLimited: NonNullable<RateLimitOptions['onLimited']>) {
    let served = 0;
    const app = new Koa();
    app.use(rateLimit({ ...base, clock: clockAt(0), onLimited }));
    app.use((ctx) => {
      served++;
      ctx.body = 'ok';
    });
    server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server?.once('listening', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    await request(url).get('/').expect(200);
    const res = await request(url).get('/');
    return { res, served };
  }

  // Regression: an `onLimited` that only logged left Koa's default response, a 404 Not Found.
  it('sends the default problem document, 429, when onLimited sets no response', async () => {
    const seen: number[] = [];
    const { res, served } = await refusedBy((_ctx, decision) => {
      seen.push(decision.retryAfterMs);
    });
    expect(served).toBe(1);
    expect(seen).toEqual([60_000]);
    expect(res.status).toBe(429);
    expect(res.headers['content-type']).toBe('application/problem+json');
    expect(JSON.parse(res.text)).toMatchObject({ status: 429, 'violated-policies': ['1-per-1m'] });
    expect(res.headers['retry-after']).toBe('60');
  });

  it('keeps 429 for a body onLimited sets without a status, after it awaits', async () => {
    const { res } = await refusedBy(async (ctx) => {
      await Promise.resolve();
      ctx.body = { error: 'slow down' };
    });
    expect(res.status).toBe(429);
    expect(res.body).toEqual({ error: 'slow down' });
  });

  it('keeps the status and body onLimited sets', async () => {
    const { res } = await refusedBy((ctx) => {
      ctx.status = 503;
      ctx.body = 'busy';
    });
    expect([res.status, res.text]).toEqual([503, 'busy']);
  });

  it('sends the problem document under a status onLimited set without a body', async () => {
    const { res } = await refusedBy((ctx) => {
      ctx.status = 418;
    });
    expect(res.status).toBe(418);
    expect(JSON.parse(res.text)).toMatchObject({ status: 418 });
  });
});
