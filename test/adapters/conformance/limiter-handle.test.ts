import { createLimiter, type PolicyOptions } from '@sluice/core';
import request from 'supertest';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { RunningApp } from '../harness/index.js';
import { clockAt, collectingLogger, decisionOf, draft11 } from '../helpers.js';
import { adapterCases } from '../stores.js';

const { cases, close } = await adapterCases();
afterAll(() => close());

describe.each(cases)(
  '$name: the limiter behind the middleware, shared counts, limits per key',
  ({ harness, store }) => {
    let app: RunningApp | undefined;
    afterEach(() => app?.close());
    const fixed = { algorithm: 'fixed-window', logger: collectingLogger(), clock: clockAt(0) };

    it('peeks, refunds and resets the quota the middleware counts in', async () => {
      app = await harness.start({ limits: [{ ...fixed, limit: 2, window: '1m', store: store.create() }] });
      const limiter = app.handle?.limiter;
      if (limiter === undefined) throw new Error('no limiter on the middleware');
      await request(app.url).get('/').expect(200);
      await request(app.url).get('/').expect(200);
      expect(await limiter.peek('127.0.0.1')).toMatchObject({ allowed: false, remaining: 0 });
      await request(app.url).get('/').expect(429);
      await limiter.refund('127.0.0.1', 1);
      expect(draft11(await request(app.url).get('/').expect(200)).state['2-per-1m']?.r).toBe(0);
      await limiter.reset('127.0.0.1');
      expect(decisionOf(await request(app.url).get('/').expect(200)).remaining).toBe(1);
    });

    it('shares one count between limits given the same prefix and policies', async () => {
      const shared = { ...fixed, limit: 3, window: '1m', prefix: 'auth-routes', store: store.create() };
      app = await harness.start({ routeLimits: { '/login': shared, '/signup': shared } });
      await request(app.url).get('/login').expect(200);
      await request(app.url).get('/signup').expect(200);
      expect(draft11(await request(app.url).get('/login').expect(200)).state['3-per-1m']?.r).toBe(0);
      await request(app.url).get('/signup').expect(429);
      // Any limiter on the same store and prefix reads the same count.
      const sameCount = createLimiter({
        limit: 3,
        window: '1m',
        algorithm: 'fixed-window',
        prefix: 'auth-routes',
        store: shared.store,
        clock: fixed.clock,
      });
      expect((await sameCount.peek('127.0.0.1')).remaining).toBe(0);
    });

    it('takes limit as a function of the request and key, one count across the limits it returns', async () => {
      const seen: string[] = [];
      const limit = async (req: unknown, key: string) => {
        seen.push(key);
        return harness.header(req, 'x-plan') === 'pro' ? 3 : 1;
      };
      app = await harness.start({ limits: [{ ...fixed, limit, window: '1m', store: store.create() }] });
      await request(app.url).get('/').expect(200);
      await request(app.url).get('/').expect(429);
      const pro = await request(app.url).get('/').set('x-plan', 'pro').expect(200);
      expect(draft11(pro).policy).toEqual({ '3-per-1m': { q: 3, w: 60 } });
      // The client used 1 before its limit rose to 3.
      expect(draft11(pro).state['3-per-1m']?.r).toBe(1);
      expect(seen).toEqual(['127.0.0.1', '127.0.0.1', '127.0.0.1']);
    });

    it('gives application code the limiter of one tier of a policies function', async () => {
      const free: PolicyOptions[] = [{ name: 'free', limit: 2, window: '1m' }];
      const pro: PolicyOptions[] = [{ name: 'pro', limit: 5, window: '1m' }];
      const policies = (req: unknown) => (harness.header(req, 'x-plan') === 'pro' ? pro : free);
      app = await harness.start({
        limits: [{ policies, logger: fixed.logger, clock: fixed.clock, store: store.create() }],
      });
      await request(app.url).get('/').set('x-plan', 'pro').expect(200);
      const handle = app.handle;
      expect(handle?.limiter).toBeUndefined();
      expect((await handle?.limiterFor(pro).peek('127.0.0.1'))?.remaining).toBe(4);
      expect((await handle?.limiterFor(free).peek('127.0.0.1'))?.remaining).toBe(2);
      await handle?.limiterFor(pro).reset('127.0.0.1');
      expect(decisionOf(await request(app.url).get('/').set('x-plan', 'pro').expect(200)).remaining).toBe(4);
    });
  },
);
