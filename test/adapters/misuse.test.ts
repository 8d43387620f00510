import type { Server } from 'node:http';
import { type RateLimitOptions as ExpressOptions, rateLimit as expressRateLimit } from '@sluice/express';
import { type RateLimitOptions as KoaOptions, rateLimit as koaRateLimit } from '@sluice/koa';
import express, { type NextFunction, type Request, type Response } from 'express';
import Koa from 'koa';
import request from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';
import { collectingLogger } from './helpers.js';

/** The error the framework's error handling received is answered as `{ code, message }`. */
function expressApp(mount: (app: express.Express) => void): Server {
  const app = express();
  mount(app);
  app.get('/', (_req, res) => res.send('ok'));
  app.use((error: { code?: string; message: string }, _req: Request, res: Response, _next: NextFunction) => {
    res.status(500).json({ code: error.code, message: error.message });
  });
  return app.listen(0, '127.0.0.1');
}

function koaApp(mount: (app: Koa) => void): Server {
  const app = new Koa();
  app.use(async (ctx, next) => {
    try {
      await next();
    } catch (error) {
      ctx.status = 500;
      ctx.body = { code: (error as { code?: string }).code, message: (error as Error).message };
    }
  });
  mount(app);
  app.use((ctx) => {
    ctx.body = 'ok';
  });
  return app.listen(0, '127.0.0.1');
}

const frameworks = [
  {
    name: 'express',
    mountUncalled: () => expressApp((app) => app.use(expressRateLimit as never)),
    createPerRequest: (options: Record<string, unknown>) =>
      expressApp((app) =>
        app.use((req, res, next) => expressRateLimit(options as unknown as ExpressOptions)(req, res, next)),
      ),
  },
  {
    name: 'koa',
    mountUncalled: () => koaApp((app) => app.use(koaRateLimit as never)),
    createPerRequest: (options: Record<string, unknown>) =>
      koaApp((app) => app.use((ctx, next) => koaRateLimit(options as unknown as KoaOptions)(ctx, next))),
  },
];

describe.each(frameworks)('$name: common mistakes', (framework) => {
  let server: Server | undefined;
  afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

  it('rateLimit mounted without being called: a coded error that shows the right call', async () => {
    server = framework.mountUncalled();
    const res = await request(server).get('/').expect(500);
    expect(res.body).toMatchObject({
      code: 'ERR_SLUICE_NOT_CALLED',
      message: expect.stringContaining("app.use(rateLimit({ limit: 100, window: '1m' }))"),
    });
    expect(res.body.message).not.toMatch(/Unknown option/);
  });

  it('a limiter created inside a request handler, which never limits, warns once with a code', async () => {
    const logger = collectingLogger();
    server = framework.createPerRequest({ limit: 1, window: '1m', logger });
    for (let i = 0; i < 3; i++) await request(server).get('/').expect(200);
    expect(logger.codes()).toEqual(['WRN_SLUICE_CREATED_IN_REQUEST']);
  });

  it('a limiter created at start-up does not warn', async () => {
    const logger = collectingLogger();
    const options = { limit: 1, window: '1m', logger } as const;
    server =
      framework.name === 'express'
        ? expressApp((app) => app.use(expressRateLimit(options)))
        : koaApp((app) => app.use(koaRateLimit(options)));
    await request(server).get('/').expect(200);
    await request(server).get('/').expect(429);
    expect(logger.messages).toEqual([]);
  });
});

describe.each([
  ['express', expressRateLimit],
  ['koa', koaRateLimit],
] as const)('%s: options that are not an object', (_name, rateLimit) => {
  it.each([undefined, null, 5, 'limit'])('%s fails with the option code, before anything reads it', (options) => {
    const call = rateLimit as (options: unknown) => unknown;
    expect(() => call(options)).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_OPTION', message: expect.stringContaining('an object') }),
    );
  });
});

describe.each([
  ['express', expressRateLimit],
  ['koa', koaRateLimit],
] as const)('%s: a message object JSON cannot write', (_name, rateLimit) => {
  it.each([
    [
      'a cycle',
      (() => {
        const body: Record<string, unknown> = { title: 'slow down' };
        body.self = body;
        return body;
      })(),
    ],
    ['a BigInt', { retry: 10n }],
  ])('with %s fails at start-up, not on every refusal', (_label, message) => {
    expect(() => rateLimit({ limit: 1, window: '1m', message })).toThrow(
      expect.objectContaining({
        code: 'ERR_SLUICE_INVALID_OPTION',
        message: expect.stringContaining('an object JSON can write'),
      }),
    );
  });
});
