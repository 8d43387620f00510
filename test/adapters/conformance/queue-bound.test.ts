import diagnostics from 'node:diagnostics_channel';
import { type ClientRequest, request as httpRequest } from 'node:http';
import { createLimiter, type DecisionEvent, type RefundEvent, SLUICE_CHANNELS } from '@sluice/core';
import { createMemoryStore } from '@sluice/memory';
import { parseRules } from '@sluice/rules';
import request from 'supertest';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { listen } from '../../helpers/channels.js';
import { harnesses, type RunningApp } from '../harness/index.js';
import { clockAt, collectingLogger } from '../helpers.js';

describe.each(harnesses)('$name: queue mode holds a bounded number of requests', (harness) => {
  let app: RunningApp | undefined;
  const clients: ClientRequest[] = [];
  afterEach(async () => {
    for (const client of clients.splice(0)) client.destroy();
    await app?.close();
  });

  /**
   * Clients c0…c(count − 1) each send a request that passes, then a second that would be
   * queued, one at a time so that which are held is known: the first `held`. Returns the
   * answers to the others (the held ones stay open until the test ends).
   */
  const secondRequests = async (url: string, count: number, held: number) => {
    for (let i = 0; i < count; i++) await request(url).get('/').set('x-client', `c${i}`).expect(200);
    const answers: { client: string; status: number; retryAfter: string | undefined }[] = [];
    for (let i = 0; i < count; i++) {
      const client = httpRequest(`${url}/`, { headers: { 'x-client': `c${i}` } }, (res) => {
        answers.push({ client: `c${i}`, status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'] });
        res.resume();
      });
      client.on('error', () => {});
      client.end();
      clients.push(client);
      if (i >= held) await vi.waitFor(() => expect(answers).toHaveLength(i - held + 1));
    }
    return answers;
  };

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
    const decisions = listen<DecisionEvent>(SLUICE_CHANNELS.decision);
    const refunds = listen<RefundEvent>(SLUICE_CHANNELS.refund);
    // Each client's first request passes at once; its second is queued for 10 s.
    const answers = await secondRequests(url, 6, 3);
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
    // The events add up to what the store holds: the refusals went out as refusals, so their
    // charges given back are no refunds (they were counted against the quota twice over).
    const results = decisions.filter((d) => d.limiter === 'bounded').map((d) => d.result);
    expect(results.sort()).toEqual([
      ...Array(6).fill('allowed'),
      ...Array(3).fill('limited'),
      ...Array(3).fill('queued'),
    ]);
    // (The previous test's held clients, let go as it ended, may give theirs back meanwhile.)
    expect(refunds.filter((r) => r.limiter === 'bounded')).toEqual([]);
  });

  // The queue is every client's: a client refused because others filled it was struck towards
  // a ban, and with `after: 0` banned for the traffic of others.
  it("a refusal because the queue is full is no strike towards the client's ban", async () => {
    const policy = { algorithm: 'gcra', limit: 1, window: '10s', burst: 1, queue: { maxDelayMs: '1m' } } as const;
    const key = (req: unknown) => harness.header(req, 'x-client') ?? 'none';
    const ban = { after: 0, duration: '1h' };
    app = await harness.start({
      limits: [{ ...policy, key, maxQueued: 1, ban, store: createMemoryStore(), clock: clockAt(0) }],
    });
    const answers = await secondRequests(app.url, 3, 1);
    expect(answers.map((a) => [a.client, a.status])).toEqual([
      ['c1', 429],
      ['c2', 429],
    ]);
    // Refused again for the full queue, not banned.
    const again = await request(app.url).get('/').set('x-client', 'c1');
    expect(again.status).toBe(429);
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
    const refunds = listen<RefundEvent>(SLUICE_CHANNELS.refund);
    const answers = await secondRequests(url, 4, 2);
    expect(answers.map((a) => [a.client, a.status])).toEqual([
      ['c2', 429],
      ['c3', 429],
    ]);
    expect(refunds.filter((r) => r.limiter.startsWith('r.'))).toEqual([]);
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

  // Giving back used to refund every matched rule, so a quota_mode rule that had refused
  // (and was never charged) got a unit back and admitted past its limit.
  it('rules mode: a full queue gives back only what was charged, never a quota_mode rule that refused', async () => {
    const clock = clockAt(0);
    const rules = parseRules(`
domain: api
descriptors:
  - key: header.x-q
    policies: [{ name: queued, limit: 1, window: 10s, algorithm: gcra, burst: 1, queue: { maxDelayMs: 15s } }]
  - key: header.x-a
    quota_mode: true
    rate_limit: { unit: hour, requests_per_unit: 1 }
  - key: header.x-b
    quota_mode: true
    rate_limit: { unit: hour, requests_per_unit: 100 }
`);
    app = await harness.start({
      limits: [
        {
          rules,
          descriptors: [['header.x-q'], ['header.x-a'], ['header.x-b']],
          maxQueued: 1,
          store: createMemoryStore(),
          clock,
          logger: collectingLogger(),
        },
      ],
    });
    const url = app.url;
    const both = { 'x-q': 'c', 'x-a': 's', 'x-b': 's' };
    await request(url).get('/').set(both).expect(200);
    // A's one request an hour is spent; B still allows, so the request passes (quota mode).
    await request(url)
      .get('/')
      .set({ ...both, 'x-q': 'a' })
      .expect(200);
    await request(url).get('/').set('x-a', 's').expect(429);
    const held = new Promise<void>((resolve) => {
      const onHold = () => {
        diagnostics.unsubscribe(SLUICE_CHANNELS.queue, onHold);
        resolve();
      };
      diagnostics.subscribe(SLUICE_CHANNELS.queue, onHold);
    });
    const holder = httpRequest(`${url}/`, { headers: { 'x-q': 'a' } });
    holder.on('error', () => {});
    holder.end();
    clients.push(holder);
    await held;
    // c's second request would be queued, but the queue is full: refused, its charges given back.
    await request(url).get('/').set(both).expect(429);
    await request(url).get('/').set('x-a', 's').expect(429);
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
