import type { RateLimitStore } from '@sluice/core';
import request from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';
import { harnesses, type RunningApp } from './harness/index.js';
import { clockAt, collectingLogger } from './helpers.js';

/**
 * An `onLimited` that sends a body without setting a status (`res.json(…)` in Express,
 * `reply.send(…)` in Fastify, at once or after an await) answered the refused request 200 OK:
 * only Koa set the refusal's status before calling it. Every adapter now does, so the refusal
 * goes out as 429 (503 when the store could not decide) unless `onLimited` sets another; an
 * `onLimited` that throws is still answered as an error, and one that lets the request go on
 * (Express's `next()`) leaves it the status it had.
 */
const slowDown = { error: 'slow down' };
const later = () => new Promise((resolve) => setImmediate(resolve));

/** Per framework: an onLimited sending `slowDown` without a status, then one doing so after an await. */
const bodyOnly = {
  express: [
    (_req: unknown, res: { json(body: unknown): void }) => res.json(slowDown),
    async (_req: unknown, res: { json(body: unknown): void }) => {
      await later();
      res.json(slowDown);
    },
  ],
  koa: [
    (ctx: { body: unknown }) => {
      ctx.body = slowDown;
    },
    async (ctx: { body: unknown }) => {
      await later();
      ctx.body = slowDown;
    },
  ],
  fastify: [
    (_request: unknown, reply: { send(body: unknown): void }) => reply.send(slowDown),
    async (_request: unknown, reply: { send(body: unknown): void }) => {
      await later();
      reply.send(slowDown);
    },
  ],
};

const down = (): Promise<never> => Promise.reject(new Error('connection refused'));
const broken = (): RateLimitStore => ({ name: 'broken', consume: down, reset: down, refund: down });

describe.each(harnesses)('$name: an onLimited that sends a body without a status', (harness) => {
  let app: RunningApp | undefined;
  afterEach(() => app?.close());
  const oneEach = { algorithm: 'fixed-window', limit: 1, window: '1m', clock: clockAt(0), logger: collectingLogger() };

  it.each(bodyOnly[harness.name].map((onLimited, i) => [i === 0 ? 'at once' : 'after an await', onLimited]))(
    'answers the refusal 429, %s',
    async (_when, onLimited) => {
      app = await harness.start({ limits: [{ ...oneEach, onLimited }] });
      await request(app.url).get('/').expect(200);
      const res = await request(app.url).get('/').expect(429);
      expect(res.body).toEqual(slowDown);
      expect(res.headers['retry-after']).toBe('60');
      expect(app.hits()).toBe(1);
    },
  );

  it('answers 503 when the store could not decide', async () => {
    const [onLimited] = bodyOnly[harness.name];
    app = await harness.start({ limits: [{ ...oneEach, store: broken(), onStoreError: 'deny', onLimited }] });
    const res = await request(app.url).get('/').expect(503);
    expect(res.body).toEqual(slowDown);
  });

  it('answers an onLimited that throws as an error, not as the refusal', async () => {
    const onLimited = () => {
      throw new Error('onLimited broke');
    };
    app = await harness.start({ limits: [{ ...oneEach, onLimited }] });
    await request(app.url).get('/').expect(200);
    await request(app.url).get('/').expect(500);
    expect(app.errors()).toMatchObject([{ message: 'onLimited broke' }]);
  });
});

describe('express: an onLimited that lets the request go on with next()', () => {
  let app: RunningApp | undefined;
  afterEach(() => app?.close());

  it('leaves it the status it had', async () => {
    const express = harnesses.find((harness) => harness.name === 'express');
    const onLimited = (_req: unknown, _res: unknown, next: () => void) => next();
    app = await (express as (typeof harnesses)[number]).start({
      limits: [{ algorithm: 'fixed-window', limit: 1, window: '1m', clock: clockAt(0), onLimited }],
    });
    await request(app.url).get('/').expect(200);
    await request(app.url).get('/').expect(200);
    expect(app.hits()).toBe(2);
  });
});
