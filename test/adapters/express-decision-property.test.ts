import { rateLimit } from '@sluice/express';
import express, { type RequestHandler } from 'express';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { collectingLogger } from './helpers.js';

const limit = (limit: number, prefix: string) => rateLimit({ limit, window: '1m', prefix, logger: collectingLogger() });

/** Answers with what `req.rateLimit` holds and whether the request carries it as its own property. */
const report: RequestHandler = (req, res) => {
  res.json({ remaining: req.rateLimit?.remaining ?? null, own: Object.hasOwn(req, 'rateLimit') });
};

describe('express: req.rateLimit', () => {
  it('holds each request its own decision, through an accessor rather than an own property', async () => {
    const app = express();
    app.use(limit(3, 'decision-own'));
    app.get('/', report);
    const seen = [];
    for (let i = 0; i < 3; i++) seen.push((await request(app).get('/').expect(200)).body);
    expect(seen).toEqual([
      { remaining: 2, own: false },
      { remaining: 1, own: false },
      { remaining: 0, own: false },
    ]);
  });

  it('is the last counting limiter’s decision, across a mounted app and back out of it', async () => {
    const inner = express();
    inner.use(limit(10, 'decision-inner'));
    inner.get('/in', report);
    inner.use((_req, _res, next) => next());
    const outer = express();
    outer.use(limit(5, 'decision-outer'));
    outer.use('/sub', inner);
    // Reached after the mounted app passed the request back: Express has restored the outer
    // app's request prototype by then.
    outer.use(report);
    expect((await request(outer).get('/sub/in').expect(200)).body).toEqual({ remaining: 9, own: false });
    expect((await request(outer).get('/sub/elsewhere').expect(200)).body).toEqual({ remaining: 8, own: false });
    expect((await request(outer).get('/top').expect(200)).body).toEqual({ remaining: 2, own: false });
  });

  it('can be assigned by the application, and a later limiter replaces what it assigned', async () => {
    const app = express();
    app.use((req, _res, next) => {
      req.rateLimit = { remaining: -1 } as never;
      next();
    });
    app.get('/before', report);
    app.use(limit(4, 'decision-assigned'));
    app.get('/after', report);
    expect((await request(app).get('/before').expect(200)).body).toEqual({ remaining: -1, own: false });
    expect((await request(app).get('/after').expect(200)).body).toEqual({ remaining: 3, own: false });
  });

  it('is cleared by assigning undefined; delete leaves it, as the README says', async () => {
    const app = express();
    app.use(limit(4, 'decision-cleared'));
    app.get('/', (req, res) => {
      delete req.rateLimit;
      const afterDelete = (req.rateLimit as { remaining: number } | undefined)?.remaining;
      req.rateLimit = undefined;
      res.json({ afterDelete, afterClear: req.rateLimit ?? null, inherited: 'rateLimit' in req });
    });
    expect((await request(app).get('/').expect(200)).body).toEqual({
      afterDelete: 3,
      afterClear: null,
      inherited: true,
    });
  });

  it('an own rateLimit property another middleware defined is replaced, not hidden behind', async () => {
    const app = express();
    app.use((req, _res, next) => {
      Object.defineProperty(req, 'rateLimit', { value: { remaining: -1 }, writable: true, enumerable: true });
      next();
    });
    app.use(limit(4, 'decision-defined'));
    app.get('/', report);
    expect((await request(app).get('/').expect(200)).body).toEqual({ remaining: 3, own: true });
  });

  it('a getter another middleware defined, on the request or on its app’s request, is replaced; the 429 still comes', async () => {
    const app = express();
    Object.defineProperty(app.request, 'rateLimit', { get: () => 'app’s', configurable: true });
    app.use((req, _res, next) => {
      if (req.path === '/own') Object.defineProperty(req, 'rateLimit', { get: () => 'theirs', configurable: true });
      next();
    });
    const limiter = limit(3, 'decision-getter');
    app.use(limiter);
    app.get(['/own', '/inherited'], report);
    expect((await request(app).get('/own').expect(200)).body).toEqual({ remaining: 2, own: true });
    expect((await request(app).get('/inherited').expect(200)).body).toEqual({ remaining: 1, own: true });
    expect((await request(app).get('/own').expect(200)).body).toEqual({ remaining: 0, own: true });
    await request(app).get('/own').expect(429);
    expect((await limiter.limiter?.peek('127.0.0.1'))?.remaining).toBe(0);
  });

  it.each([
    ['defined read-only and not configurable', { value: 'theirs', enumerable: true }],
    [
      'whose setter refuses the decision by throwing',
      {
        get: () => 'theirs',
        set: () => {
          throw new TypeError('rateLimit is read-only');
        },
      },
    ],
  ] as const)(
    'a rateLimit %s is left as it is, with a warning, and the request is still limited',
    async (_, property) => {
      const logger = collectingLogger();
      const app = express();
      app.use((req, _res, next) => {
        Object.defineProperty(req, 'rateLimit', property);
        next();
      });
      app.use(rateLimit({ limit: 1, window: '1m', prefix: 'decision-left', logger }));
      app.get('/', (req, res) => res.json({ rateLimit: req.rateLimit }));
      expect((await request(app).get('/').expect(200)).body).toEqual({ rateLimit: 'theirs' });
      await request(app).get('/').expect(429);
      expect(logger.codes()).toEqual(['WRN_SLUICE_DECISION_NOT_STORED']);
    },
  );

  it('a rateLimit defined not configurable but with a setter is assigned through it', async () => {
    const app = express();
    app.use((req, _res, next) => {
      let stored: unknown;
      Object.defineProperty(req, 'rateLimit', { get: () => stored, set: (value) => (stored = value) });
      next();
    });
    app.use(limit(3, 'decision-setter'));
    app.get('/', report);
    expect((await request(app).get('/').expect(200)).body).toEqual({ remaining: 2, own: true });
  });

  it('three limiters each reached twice count once each, after the application assigned a decision first', async () => {
    const app = express();
    app.use((req, _res, next) => {
      req.rateLimit = { remaining: -1 } as never;
      next();
    });
    const first = limit(6, 'decision-first');
    const second = limit(5, 'decision-second');
    const third = limit(3, 'decision-third');
    const router = express.Router();
    router.use(first, second, third);
    app.use(first, second, third, router);
    app.get('/', (req, res) => res.json({ remaining: req.rateLimit?.remaining, key: req.rateLimit?.key }));
    const keys = new Set<string>();
    for (const remaining of [2, 1, 0]) {
      const { body } = await request(app).get('/').expect(200);
      expect(body.remaining).toBe(remaining);
      keys.add(body.key);
    }
    await request(app).get('/').expect(429);
    // The first two counted each of the four requests once.
    expect(keys.size).toBe(1);
    const [key = ''] = keys;
    expect((await first.limiter?.peek(key))?.remaining).toBe(2);
    expect((await second.limiter?.peek(key))?.remaining).toBe(1);
  });
});
