import { type ClientHttp2Session, connect as connectHttp2, constants, createServer } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { rateLimitPlugin } from '@sluice/fastify';
import { rateLimit } from '@sluice/koa';
import Fastify from 'fastify';
import Koa from 'koa';
import { afterEach, describe, expect, it } from 'vitest';
import { clockAt, collectingLogger } from './helpers.js';

/** A handler that never answers, and how many times one ran. */
function hangs() {
  let runs = 0;
  return { runs: () => runs, ran: () => runs++, never: new Promise<never>(() => {}) };
}

/**
 * Asks for `path` and resets the stream once the handler runs (RST_STREAM, CANCEL), as a
 * client that never waits for its answers does; a refusal, answered before any handler, is
 * read instead. Resolves with the status seen, if any.
 */
function resetOnceHandled(session: ClientHttp2Session, path: string, runs: () => number): Promise<number | undefined> {
  const before = runs();
  return new Promise((resolve) => {
    let status: number | undefined;
    const stream = session.request({ ':path': path });
    stream.on('response', (headers) => {
      status = Number(headers[':status']);
    });
    stream.on('data', () => {});
    stream.on('error', () => {});
    stream.on('close', () => {
      clearInterval(poll);
      resolve(status);
    });
    stream.end();
    const poll = setInterval(() => {
      if (runs() > before) stream.close(constants.NGHTTP2_CANCEL);
    }, 2);
  });
}

/** The status of one request that is answered. */
function statusOf(session: ClientHttp2Session, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const stream = session.request({ ':path': path });
    stream.on('response', (headers) => resolve(Number(headers[':status'])));
    stream.on('data', () => {});
    stream.on('error', reject);
    stream.end();
  });
}

const limits = {
  limit: 2,
  window: '1m',
  algorithm: 'fixed-window',
  clock: clockAt(0),
  logger: collectingLogger(),
} as const;

// Over HTTP/2 a stream its client reset read as a response fully sent (its writableFinished is
// the stream's), so it was refunded by the status it had then: 200 on Fastify, Koa's default 404.
// A client resetting each stream ran handlers without end (30 of a limit of 3).
describe('HTTP/2: a stream the client resets stays counted', () => {
  const ends: (() => Promise<unknown> | unknown)[] = [];
  afterEach(async () => {
    for (const end of ends.splice(0).reverse()) await end();
  });
  const session = (port: number) => {
    const client = connectHttp2(`http://127.0.0.1:${port}`);
    client.on('error', () => {});
    ends.push(() => client.close());
    return client;
  };

  it('on Fastify (http2: true) under skipSuccessfulRequests', async () => {
    const handler = hangs();
    const app = Fastify({ http2: true });
    ends.push(() => app.close());
    await app.register(rateLimitPlugin, { ...limits, skipSuccessfulRequests: true });
    app.get('/hang', () => {
      handler.ran();
      return handler.never;
    });
    app.get('/', async () => 'ok');
    await app.listen({ port: 0, host: '127.0.0.1' });
    const client = session((app.server.address() as AddressInfo).port);
    for (let i = 0; i < 4; i++) await resetOnceHandled(client, '/hang', handler.runs);
    expect(handler.runs()).toBe(2);
    expect(await statusOf(client, '/')).toBe(429);
  });

  it('on Koa (node:http2) under skipFailedRequests', async () => {
    const handler = hangs();
    const app = new Koa();
    app.use(rateLimit({ ...limits, skipFailedRequests: true }));
    app.use(async (ctx) => {
      if (ctx.path !== '/hang') {
        ctx.body = 'ok';
        return;
      }
      handler.ran();
      await handler.never;
    });
    const server = createServer(app.callback());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    ends.push(() => new Promise((resolve) => server.close(resolve)));
    const client = session((server.address() as AddressInfo).port);
    for (let i = 0; i < 4; i++) await resetOnceHandled(client, '/hang', handler.runs);
    expect(handler.runs()).toBe(2);
    expect(await statusOf(client, '/')).toBe(429);
  });
});
