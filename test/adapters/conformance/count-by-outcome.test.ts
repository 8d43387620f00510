import { request as httpRequest } from 'node:http';
import type { RateLimitHandle } from '@sluice/core';
import request from 'supertest';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import type { RunningApp } from '../harness/index.js';
import { clockAt, collectingLogger, draft11 } from '../helpers.js';
import { adapterCases } from '../stores.js';

const { cases, close } = await adapterCases();
afterAll(() => close());

/** The quota left once every refund the responses started has landed. */
async function settledRemaining(app: RunningApp, key: string, expected: number): Promise<void> {
  const { limiter } = app.handle as RateLimitHandle;
  await vi.waitFor(async () => expect((await limiter?.peek(key))?.remaining).toBe(expected), {
    timeout: 5000,
    interval: 5,
  });
}

/** Sends a request and aborts it once the server has it: the handler of `/hang` never answers. */
function abortedRequest(app: RunningApp, hitsBefore: number): Promise<void> {
  return new Promise((resolve) => {
    const req = httpRequest(`${app.url}/hang`);
    req.on('error', () => resolve());
    req.end();
    const poll = setInterval(() => {
      if (app.hits() > hitsBefore) {
        clearInterval(poll);
        req.destroy();
      }
    }, 2);
  });
}

describe.each(cases)('$name: counting by outcome', ({ harness, store }) => {
  let app: RunningApp | undefined;
  afterEach(() => app?.close());
  const options = (extra: Record<string, unknown>) => ({
    limit: 4,
    window: '1m',
    algorithm: 'fixed-window',
    store: store.create(),
    clock: clockAt(0),
    logger: collectingLogger(),
    ...extra,
  });

  it('skipFailedRequests gives back the quota of responses with status ≥ 400, exactly, under concurrency', async () => {
    const statuses = [200, 500, 404, 200, 503, 200, 400, 200];
    const limit = 8;
    app = await harness.start({ limits: [options({ limit, skipFailedRequests: true })] });
    const running = app;
    await Promise.all(
      statuses.map((status) => request(running.url).get('/').set('x-status', String(status)).expect(status)),
    );
    await settledRemaining(app, '127.0.0.1', limit - 4);
    // The refunded units are real quota: four more requests pass, the fifth is refused.
    for (let i = 0; i < 4; i++) await request(app.url).get('/').expect(200);
    await request(app.url).get('/').expect(429);
  });

  it('skipSuccessfulRequests counts only failures', async () => {
    app = await harness.start({ limits: [options({ limit: 2, skipSuccessfulRequests: true })] });
    for (let i = 0; i < 5; i++) await request(app.url).get('/').expect(200);
    await settledRemaining(app, '127.0.0.1', 2);
    await request(app.url).get('/').set('x-status', '401').expect(401);
    await request(app.url).get('/').set('x-status', '401').expect(401);
    await settledRemaining(app, '127.0.0.1', 0);
    const refused = await request(app.url).get('/').expect(429);
    expect(draft11(refused).state['2-per-1m']?.r).toBe(0);
  });

  it('requestWasSuccessful decides what success is', async () => {
    const requestWasSuccessful = (req: unknown) => harness.header(req, 'x-good') === 'yes';
    app = await harness.start({ limits: [options({ limit: 3, skipFailedRequests: true, requestWasSuccessful })] });
    await request(app.url).get('/').set('x-good', 'yes').expect(200);
    await request(app.url).get('/').expect(200);
    await request(app.url).get('/').set('x-status', '500').set('x-good', 'yes').expect(500);
    await settledRemaining(app, '127.0.0.1', 1);
  });

  it('a requestWasSuccessful answering neither true nor false leaves the request counted, and warns', async () => {
    const logger = collectingLogger();
    // A body that forgot its `return`: read by truthiness, every request would be a failure.
    const requestWasSuccessful = () => undefined;
    app = await harness.start({
      limits: [options({ limit: 3, skipFailedRequests: true, requestWasSuccessful, logger })],
    });
    await request(app.url).get('/').set('x-status', '500').expect(500);
    await vi.waitFor(() => expect(logger.codes()).toEqual(['WRN_SLUICE_NOT_BOOLEAN']));
    await settledRemaining(app, '127.0.0.1', 2);
  });

  // Regression: refunded as failed while its handler still ran, a client that dropped each
  // connection ran handlers without end and was never limited (30 of a limit of 3).
  it('a request the client aborts stays counted under skipFailedRequests', async () => {
    app = await harness.start({ limits: [options({ limit: 2, skipFailedRequests: true })] });
    await abortedRequest(app, app.hits());
    await abortedRequest(app, app.hits());
    // A response after them lands any refund they started before it is read.
    await request(app.url).get('/').expect(429);
    expect((await app.handle?.limiter?.peek('127.0.0.1'))?.remaining).toBe(0);
  });

  it('a request the client aborts stays counted under skipSuccessfulRequests', async () => {
    app = await harness.start({ limits: [options({ limit: 2, skipSuccessfulRequests: true })] });
    await abortedRequest(app, app.hits());
    await request(app.url).get('/').expect(200);
    await settledRemaining(app, '127.0.0.1', 1);
  });

  it('never refunds a refused request: it spent nothing', async () => {
    app = await harness.start({ limits: [options({ limit: 1, skipFailedRequests: true })] });
    await request(app.url).get('/').expect(200);
    await request(app.url).get('/').set('x-status', '500').expect(429);
    await request(app.url).get('/').expect(429);
    // Any refund the refusals started has landed by the time a later response is read.
    await request(app.url).get('/').expect(429);
    expect((await app.handle?.limiter?.peek('127.0.0.1'))?.remaining).toBe(0);
  });
});
