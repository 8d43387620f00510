import type { Decision } from '@sluice/core';
import request from 'supertest';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { RunningApp } from '../harness/index.js';
import { clockAt, collectingLogger, draft11 } from '../helpers.js';
import { adapterCases } from '../stores.js';

const { cases, close } = await adapterCases();
afterAll(() => close());

describe.each(cases)('$name: message, statusCode, notifications, allowList', ({ harness, store }) => {
  let app: RunningApp | undefined;
  afterEach(() => app?.close());
  const options = (extra: Record<string, unknown>) => ({
    limit: 1,
    window: '1m',
    algorithm: 'fixed-window',
    store: store.create(),
    clock: clockAt(30_000),
    logger: collectingLogger(),
    ...extra,
  });

  it('answers a refusal with a text message and a status of choice, headers kept', async () => {
    app = await harness.start({ limits: [options({ message: 'Slow down.', statusCode: 503 })] });
    await request(app.url).get('/').expect(200);
    const res = await request(app.url).get('/').expect(503);
    expect(res.text).toBe('Slow down.');
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    expect(res.headers['retry-after']).toBe('30');
    expect(draft11(res).state['1-per-1m']).toEqual({ r: 0, t: 30 });
  });

  it('sends an object message as JSON, with the default 429', async () => {
    app = await harness.start({ limits: [options({ message: { error: 'too many' } })] });
    await request(app.url).get('/').expect(200);
    const res = await request(app.url).get('/').expect(429);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.body).toEqual({ error: 'too many' });
  });

  it('builds the message with an async function of the request and decision', async () => {
    const message = async (req: unknown, decision: Decision) =>
      `${harness.header(req, 'x-user') ?? '?'}: retry in ${decision.retryAfterMs} ms`;
    app = await harness.start({ limits: [options({ message })] });
    await request(app.url).get('/').expect(200);
    const res = await request(app.url).get('/').set('x-user', 'ada').expect(429);
    expect(res.text).toBe('ada: retry in 30000 ms');
  });

  it('keeps the problem document with statusCode alone, its status matching', async () => {
    app = await harness.start({ limits: [options({ statusCode: 420 })] });
    await request(app.url).get('/').expect(200);
    const res = await request(app.url).get('/').expect(420);
    expect(JSON.parse(res.text)).toMatchObject({ status: 420, 'violated-policies': ['1-per-1m'] });
  });

  it('tells onExceeding and onExceeded without changing the response; a failing hook is logged once', async () => {
    const calls: string[] = [];
    const logger = collectingLogger();
    const onExceeding = (req: unknown, d: Decision) => calls.push(`under ${d.remaining} ${harness.header(req, 'x-n')}`);
    const onExceeded = (_req: unknown, d: Decision) => {
      calls.push(`over ${d.retryAfterMs}`);
      throw new Error('hook broke');
    };
    app = await harness.start({ limits: [options({ limit: 2, onExceeding, onExceeded, logger })] });
    await request(app.url).get('/').set('x-n', '1').expect(200);
    await request(app.url).get('/').set('x-n', '2').expect(200);
    await request(app.url).get('/').expect(429);
    await request(app.url).get('/').expect(429);
    expect(calls).toEqual(['under 1 1', 'under 0 2', 'over 30000', 'over 30000']);
    expect(logger.codes()).toEqual(['WRN_SLUICE_CALLBACK_FAILED']);
  });

  it('neither counts nor limits the keys of allowList', async () => {
    app = await harness.start({ limits: [options({ allowList: ['127.0.0.1'] })] });
    for (let i = 0; i < 3; i++) {
      const res = await request(app.url).get('/').expect(200);
      expect(res.headers.ratelimit).toBeUndefined();
    }
  });

  it('takes allowList as a function of the request and key', async () => {
    const key = (req: unknown) => harness.header(req, 'x-user') ?? 'anonymous';
    const allowList = async (req: unknown, k: string) => k === 'ops' || harness.header(req, 'x-internal') === '1';
    app = await harness.start({ limits: [options({ key, allowList })] });
    for (let i = 0; i < 3; i++) await request(app.url).get('/').set('x-user', 'ops').expect(200);
    for (let i = 0; i < 3; i++) await request(app.url).get('/').set('x-internal', '1').expect(200);
    await request(app.url).get('/').set('x-user', 'ada').expect(200);
    await request(app.url).get('/').set('x-user', 'ada').expect(429);
  });
});
