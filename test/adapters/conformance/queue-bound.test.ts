import { type ClientRequest, request as httpRequest } from 'node:http';
import { createLimiter } from '@sluice/core';
import { createMemoryStore } from '@sluice/memory';
import { parseRules } from '@sluice/rules';
import request from 'supertest';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { harnesses, type RunningApp } from '../harness/index.js';
import { clockAt, collectingLogger } from '../helpers.js';

describe.each(harnesses)('$name: queue mode holds a bounded number of requests', (harness) => {
  let app: RunningApp | undefined;
  const clients: ClientRequest[] = [];
  afterEach(async () => {
    for (const client of clients.splice(0)) client.destroy();
    await app?.close();
  });

  // 25 keys × 40 queued requests used to hold 501 responses at once: there was no bound.
  it('beyond maxQueued a request is refused with Retry-After, not held, and its charge given back', async () => {
    const store = createMemoryStore();
    const clock = clockAt(0);
    const policy = { algorithm: 'gcra', limit: 1, window: '10s', burst: 1, queue: { maxDelayMs: '1m' } } as const;
    const key = (req: unknown) => harness.header(req, 'x-client') ?? 'none';
    app = await harness.start({
      limits: [{ ...policy, key, maxQueued: 3, prefix: 'bounded', store, clock, logger: collectingLogger() }],
    });
    const observer = createLimiter({ ...policy, prefix: 'bounded', store, clock });
    const url = app.url;
    // Each client's first request passes at once; its second is queued for 10 s.
    for (let i = 0; i < 6; i++) await request(url).get('/').set('x-client', `c${i}`).expect(200);
    const answers: { client: string; status: number; retryAfter: string | undefined }[] = [];
    for (let i = 0; i < 6; i++) {
      const client = httpRequest(`${url}/`, { headers: { 'x-client': `c${i}` } }, (res) => {
        answers.push({ client: `c${i}`, status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'] });
        res.resume();
      });
      client.on('error', () => {});
      client.end();
      clients.push(client);
      // One at a time, so which are held is known: the first three.
      if (i >= 3) await vi.waitFor(() => expect(answers).toHaveLength(i - 2));
    }
    expect(answers.map((a) => [a.client, a.status])).toEqual([
      ['c3', 429],
      ['c4', 429],
      ['c5', 429],
    ]);
    // Not before the slot it would have been held for.
    for (const answer of answers) expect(Number(answer.retryAfter)).toBeGreaterThanOrEqual(10);
    // A refused request spends nothing: those clients still have one slot taken, the held ones two.
    for (const i of [3, 4, 5]) expect((await observer.peek(`c${i}`)).resetAfterMs).toBe(10_000);
    for (const i of [0, 1, 2]) expect((await observer.peek(`c${i}`)).resetAfterMs).toBe(20_000);
    expect(app.hits()).toBe(6);
  });

  // Rules mode held queued requests with no bound at all.
  it('rules mode: beyond maxQueued a request is refused, and every matched rule gets its charge back', async () => {
    const store = createMemoryStore();
    const clock = clockAt(0);
    const rules = parseRules(`
domain: api
descriptors:
  - key: header.x-client
    policies: [{ name: queued, limit: 1, window: 10s, algorithm: gcra, burst: 1, queue: { maxDelayMs: 15s } }]
`);
    app = await harness.start({
      limits: [{ rules, descriptors: [['header.x-client']], maxQueued: 2, store, clock, logger: collectingLogger() }],
    });
    const url = app.url;
    for (let i = 0; i < 4; i++) await request(url).get('/').set('x-client', `c${i}`).expect(200);
    const answers: { client: string; status: number; retryAfter: string | undefined }[] = [];
    for (let i = 0; i < 4; i++) {
      const client = httpRequest(`${url}/`, { headers: { 'x-client': `c${i}` } }, (res) => {
        answers.push({ client: `c${i}`, status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'] });
        res.resume();
      });
      client.on('error', () => {});
      client.end();
      clients.push(client);
      if (i >= 2) await vi.waitFor(() => expect(answers).toHaveLength(i - 1));
    }
    expect(answers.map((a) => [a.client, a.status])).toEqual([
      ['c2', 429],
      ['c3', 429],
    ]);
    for (const answer of answers) expect(Number(answer.retryAfter)).toBeGreaterThanOrEqual(10);
    // The refused clients spent nothing: once the held clients leave, c2's next request is
    // queued 10 s (held, so a short wait gives up first). Had its refusal been charged, it would
    // wait 20 s, past maxDelayMs, and be refused.
    for (const client of clients.splice(0, 2)) client.destroy();
    await vi.waitFor(async () => {
      const next = await fetch(`${url}/`, { headers: { 'x-client': 'c2' }, signal: AbortSignal.timeout(100) }).catch(
        (error: Error) => error,
      );
      expect(next).toBeInstanceOf(Error);
    }, 3000);
    expect(app.hits()).toBe(4);
  });

  it('refuses a maxQueued that is not a positive whole number, at start-up', async () => {
    const rules = parseRules(
      'domain: api\ndescriptors:\n  - key: remote_address\n    rate_limit: { unit: second, requests_per_unit: 1 }\n',
    );
    for (const maxQueued of [0, -1, 1.5, null, '10']) {
      await expect(harness.configure({ limit: 1, window: '1s', maxQueued })).rejects.toMatchObject({
        code: 'ERR_SLUICE_INVALID_QUEUE',
      });
      await expect(harness.configure({ rules, maxQueued })).rejects.toMatchObject({ code: 'ERR_SLUICE_INVALID_QUEUE' });
    }
  });
});
