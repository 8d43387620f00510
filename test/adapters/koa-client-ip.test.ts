import { ipKey } from '@sluice/core';
import { rateLimit } from '@sluice/koa';
import Koa from 'koa';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { addressSymbolOf } from '../../packages/koa/src/client-ip.js';
import { collectingLogger } from './helpers.js';

/** A Koa app whose route answers with the key its request counted under. */
function appWith(setup: (app: Koa) => void): Koa {
  const app = new Koa();
  setup(app);
  app.use(rateLimit({ limit: 100, window: '1m', logger: collectingLogger() }));
  app.use((ctx) => {
    ctx.body = { key: ctx.state.rateLimit?.key, fromCtxIp: ipKey(ctx.ip) };
  });
  return app;
}

/** The body the app answers one request with, sent with X-Forwarded-For when given. */
async function answerOf(app: Koa, forwarded?: string): Promise<unknown> {
  const server = app.listen(0, '127.0.0.1');
  try {
    const call = request(server).get('/');
    return (await (forwarded === undefined ? call : call.set('X-Forwarded-For', forwarded)).expect(200)).body;
  } finally {
    server.close();
  }
}

describe('koa: the client address is the one ctx.ip gives', () => {
  it('trusting no proxy, the socket address, whatever X-Forwarded-For says', async () => {
    const app = appWith(() => {});
    for (const forwarded of [undefined, '203.0.113.9']) {
      expect(await answerOf(app, forwarded)).toEqual({ key: '127.0.0.1', fromCtxIp: '127.0.0.1' });
    }
  });

  it('trusting no proxy, the address an earlier middleware set on ctx.request.ip', async () => {
    const app = appWith((koa) =>
      koa.use((ctx, next) => {
        ctx.request.ip = '198.51.100.4';
        return next();
      }),
    );
    expect(await answerOf(app)).toEqual({ key: '198.51.100.4', fromCtxIp: '198.51.100.4' });
  });

  it("trusting no proxy, the address of an app's own `ip` on its request or context", async () => {
    for (const where of ['request', 'context'] as const) {
      const app = appWith((koa) => {
        Object.defineProperty(koa[where], 'ip', { get: () => '192.0.2.77', configurable: true });
      });
      expect(await answerOf(app)).toEqual({ key: '192.0.2.77', fromCtxIp: '192.0.2.77' });
    }
  });

  it("trusting no proxy, the address of an app's own `ips`, through ctx.ip", async () => {
    const app = appWith((koa) => {
      Object.defineProperty(koa.request, 'ips', { get: () => ['192.0.2.79'], configurable: true });
    });
    expect(await answerOf(app)).toEqual({ key: '192.0.2.79', fromCtxIp: '192.0.2.79' });
  });

  it('finds where Koa keeps an address a middleware set, so the header look-up is skipped', () => {
    const symbol = addressSymbolOf(new Koa());
    expect(symbol?.description).toBe('context#ip');
    const own = new Koa();
    Object.defineProperty(own.request, 'ip', { get: () => '192.0.2.80', configurable: true });
    expect(addressSymbolOf(own)).toBeUndefined();
  });

  it('the address each app gives, when apps take turns', async () => {
    const plain = appWith(() => {}).listen(0, '127.0.0.1');
    const own = appWith((koa) => {
      Object.defineProperty(koa.request, 'ip', { get: () => '192.0.2.78', configurable: true });
    }).listen(0, '127.0.0.1');
    try {
      for (let round = 0; round < 2; round++) {
        expect((await request(plain).get('/').expect(200)).body.key).toBe('127.0.0.1');
        expect((await request(own).get('/').expect(200)).body.key).toBe('192.0.2.78');
      }
    } finally {
      plain.close();
      own.close();
    }
  });

  it('trusting one proxy, the address it forwarded', async () => {
    const app = appWith((koa) => {
      koa.proxy = true;
      koa.maxIpsCount = 1;
    });
    expect(await answerOf(app, '203.0.113.9')).toEqual({ key: '203.0.113.9', fromCtxIp: '203.0.113.9' });
  });
});
