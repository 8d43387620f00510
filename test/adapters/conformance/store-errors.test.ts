import type { RateLimitStore } from '@sluice/core';
import request from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';
import { harnesses, type RunningApp } from '../harness/index.js';
import { collectingLogger, decisionOf } from '../helpers.js';

const down = (): Promise<never> => Promise.reject(new Error('connection refused'));
/** A fresh one per app: limiters with the same policies may not share a store by accident. */
const broken = (): RateLimitStore => ({ name: 'broken', consume: down, reset: down, refund: down });

describe.each(harnesses)('$name: store failures follow onStoreError', (harness) => {
  let app: RunningApp | undefined;
  afterEach(() => app?.close());

  it("'allow' lets requests through, reports no made-up figures, and warns once", async () => {
    const logger = collectingLogger();
    app = await harness.start({
      limits: [{ limit: 1, window: '1m', store: broken(), onStoreError: 'allow', logger }],
    });
    for (let i = 0; i < 2; i++) {
      const res = await request(app.url).get('/').expect(200);
      expect(decisionOf(res).reason).toBe('store-unavailable');
      expect(res.headers.ratelimit).toBeUndefined();
    }
    expect(logger.codes()).toEqual(['WRN_SLUICE_STORE_UNAVAILABLE']);
  });

  it("'deny' answers 503 with Retry-After and the reduced-capacity problem, never a 429", async () => {
    app = await harness.start({
      limits: [{ limit: 5, window: '1m', store: broken(), onStoreError: 'deny', logger: collectingLogger() }],
    });
    const res = await request(app.url).get('/').expect(503);
    expect(res.headers['retry-after']).toBe('1');
    expect(JSON.parse(res.text)).toMatchObject({
      type: 'https://iana.org/assignments/http-problem-types#temporary-reduced-capacity',
      status: 503,
      // No policy refused: it named them all, as though the client were over quota.
      'violated-policies': [],
    });
    expect(app.hits()).toBe(0);
  });

  it("'throw' hands the error to the framework's error handling", async () => {
    app = await harness.start({
      limits: [{ limit: 5, window: '1m', store: broken(), onStoreError: 'throw', logger: collectingLogger() }],
    });
    await request(app.url).get('/').expect(500);
    expect(app.hits()).toBe(0);
  });
});
