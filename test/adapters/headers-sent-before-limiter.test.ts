import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Limiter } from '@sluice/core';
import { rateLimit as expressRateLimit } from '@sluice/express';
import { rateLimitPlugin } from '@sluice/fastify';
import { rateLimit as koaRateLimit } from '@sluice/koa';
import { parseRules } from '@sluice/rules';
import express, { type NextFunction, type Request, type Response } from 'express';
import Fastify from 'fastify';
import Koa from 'koa';
import request from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';
import { clockAt, collectingLogger, onLoopback } from './helpers.js';

/**
 * A limiter mounted after middleware that flushed the response's headers and went on can
 * neither send its RateLimit fields nor answer 429: a refusal would reach the client under the
 * status already sent (Koa sent the problem document under it), or fail with Node's uncoded
 * ERR_HTTP_HEADERS_SENT after the request was charged (Express, Fastify). Each request now
 * fails before it is counted, with a code that names the mistake.
 */
const policies = () =>
  ({
    algorithm: 'fixed-window',
    limit: 1,
    window: '1m',
    clock: clockAt(0),
    logger: collectingLogger(),
  }) as const;

const rules = () => ({
  rules: parseRules(`
domain: api
descriptors:
  - key: remote_address
    policies: [{ name: per-client, limit: 1, window: 1m, algorithm: fixed-window }]
`),
  clock: clockAt(0),
  logger: collectingLogger(),
});

type Options = ReturnType<typeof policies> | ReturnType<typeof rules>;

interface Served {
  url: string;
  errors: unknown[];
  /** The limiter, when the options have policies. */
  limiter: Limiter | undefined;
  close(): Promise<void>;
}

const apps: Record<string, (options: Options) => Promise<Served>> = {
  async express(options) {
    const errors: unknown[] = [];
    const app = express();
    app.use((_req, res, next) => {
      res.flushHeaders();
      next();
    });
    const limit = expressRateLimit(options);
    app.use(limit);
    app.get('/', (_req, res) => {
      res.end('handled');
    });
    app.use((error: unknown, _req: Request, res: Response, _next: NextFunction) => {
      errors.push(error);
      res.end();
    });
    return { ...(await onLoopback(createServer(app))), errors, limiter: limit.limiter };
  },
  async koa(options) {
    const errors: unknown[] = [];
    const app = new Koa();
    app.silent = true;
    // Koa leaves a response whose headers were sent to the app's error listener.
    app.on('error', (error: unknown, ctx: Koa.Context) => {
      errors.push(error);
      ctx.res.end();
    });
    app.use((ctx, next) => {
      ctx.res.flushHeaders();
      return next();
    });
    const limit = koaRateLimit(options);
    app.use(limit);
    app.use((ctx) => {
      ctx.body = 'handled';
    });
    return { ...(await onLoopback(createServer(app.callback()))), errors, limiter: limit.limiter };
  },
  async fastify(options) {
    const errors: unknown[] = [];
    const app = Fastify();
    app.setErrorHandler((error, _request, reply) => {
      errors.push(error);
      reply.raw.end();
    });
    app.addHook('onRequest', (_request, reply, done) => {
      reply.raw.flushHeaders();
      done();
    });
    await app.register(rateLimitPlugin, options);
    app.get('/', async () => 'handled');
    await app.listen({ port: 0, host: '127.0.0.1' });
    return {
      url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`,
      errors,
      limiter: app.rateLimiter.limiter,
      close: () => app.close(),
    };
  },
};

describe.each(Object.keys(apps))('%s: a limiter mounted after the response headers were sent', (name) => {
  let served: Served | undefined;
  afterEach(() => served?.close());

  it.each([
    ['policies', policies],
    ['rules', rules],
  ])(
    'with %s, fails each request with ERR_SLUICE_HEADERS_SENT before counting it, never answering a refusal as sent',
    async (_mode, options) => {
      served = await (apps[name] as (options: Options) => Promise<Served>)(options());
      for (let i = 0; i < 2; i++) {
        const res = await request(served.url).get('/').timeout(2000);
        expect(res.text).not.toMatch(/quota-exceeded|handled/);
      }
      expect(served.errors).toHaveLength(2);
      expect(served.errors[0]).toMatchObject({
        code: 'ERR_SLUICE_HEADERS_SENT',
        message: expect.stringMatching(/before any middleware that writes the response/),
      });
      if (served.limiter !== undefined) expect((await served.limiter.peek('127.0.0.1')).remaining).toBe(1);
    },
  );
});
