import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { performance } from 'node:perf_hooks';
import { createLimiter } from '@sluice/core';
import { createMemoryStore } from '@sluice/memory';
import request from 'supertest';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { harnesses, type RunningApp } from '../harness/index.js';
import { clockAt, collectingLogger, decisionOf, draft11 } from '../helpers.js';

describe.each(harnesses)('$name: queueing and throttling modes', (harness) => {
  let app: RunningApp | undefined;
  afterEach(() => app?.close());
  const logger = collectingLogger();

  it('holds a queued request for delayMs, then lets it through; beyond maxDelayMs it refuses', async () => {
    // 50 per second is one slot every 20 ms; the clock stands still, so each request queues behind the last.
    const queued = { algorithm: 'gcra', limit: 50, window: '1s', burst: 1, queue: { maxDelayMs: 50 } };
    app = await harness.start({ limits: [{ ...queued, logger, clock: clockAt(0) }] });
    expect(decisionOf(await request(app.url).get('/').expect(200)).delayMs).toBe(0);
    for (const delayMs of [20, 40]) {
      const started = performance.now();
      const res = await request(app.url).get('/').expect(200);
      expect(decisionOf(res).delayMs).toBe(delayMs);
      expect(performance.now() - started).toBeGreaterThanOrEqual(delayMs - 1);
    }
    const refused = await request(app.url).get('/').expect(429);
    expect(refused.headers['retry-after']).toBe('1');
    expect(app.hits()).toBe(3);
  });

  // Regression: the fields were written before the hold and sent after it, every wait overstated
  // by the time held (draft-11: generated at response time).
  it("writes a held request's RateLimit fields as of the end of its hold", async () => {
    // 50 a second with a burst of 50: at a standing clock the 51st waits 20 ms behind the
    // bucket's 1000 ms, its quota whole 1020 ms after it was decided and 1000 ms after its hold.
    const queued = { algorithm: 'gcra', limit: 50, window: '1s', queue: { maxDelayMs: 50 } };
    app = await harness.start({ limits: [{ ...queued, logger, clock: clockAt(0) }] });
    for (let i = 0; i < 50; i++) await request(app.url).get('/').expect(200);
    const res = await request(app.url).get('/').expect(200);
    expect(decisionOf(res).delayMs).toBe(20);
    expect(draft11(res).state['50-per-1s']).toEqual({ r: 0, t: 1 });
  });

  it('drops a held request whose client leaves, and gives its slot back', async () => {
    const store = createMemoryStore();
    const clock = clockAt(0);
    const policy = { algorithm: 'gcra', limit: 1, window: '10s', burst: 1, queue: { maxDelayMs: '1m' } } as const;
    app = await harness.start({ limits: [{ ...policy, prefix: 'held', store, clock, logger }] });
    const observer = createLimiter({ ...policy, prefix: 'held', store, clock });
    await request(app.url).get('/').expect(200);
    expect((await observer.peek('127.0.0.1')).resetAfterMs).toBe(10_000);

    const client = httpRequest(`${app.url}/`);
    client.on('error', () => {});
    client.end();
    await vi.waitFor(async () => expect((await observer.peek('127.0.0.1')).resetAfterMs).toBe(20_000));
    client.destroy();
    await vi.waitFor(async () => expect((await observer.peek('127.0.0.1')).resetAfterMs).toBe(10_000));
    expect(app.hits()).toBe(1);
  });

  // Regression: a response pipelined behind another is not its socket's yet, and did not close
  // when its client left: the request behind kept its slot, and its handler ran later.
  it('drops held requests pipelined on one connection when their client leaves', async () => {
    const store = createMemoryStore();
    const clock = clockAt(0);
    const policy = { algorithm: 'gcra', limit: 1, window: '10s', burst: 1, queue: { maxDelayMs: '1m' } } as const;
    app = await harness.start({ limits: [{ ...policy, prefix: 'piped', store, clock, logger }] });
    const observer = createLimiter({ ...policy, prefix: 'piped', store, clock });
    await request(app.url).get('/').expect(200);

    const socket = connect(Number(new URL(app.url).port), '127.0.0.1');
    socket.on('error', () => {});
    socket.write('GET / HTTP/1.1\r\nHost: a\r\n\r\n'.repeat(2));
    await vi.waitFor(async () => expect((await observer.peek('127.0.0.1')).resetAfterMs).toBe(30_000));
    socket.destroy();
    await vi.waitFor(async () => expect((await observer.peek('127.0.0.1')).resetAfterMs).toBe(10_000));
    expect(app.hits()).toBe(1);
  });

  it('soft mode lets overagePercent more through and says so', async () => {
    const throttle = { mode: 'soft', overagePercent: 50 };
    app = await harness.start({
      limits: [{ algorithm: 'fixed-window', limit: 2, window: '1m', throttle, logger, clock: clockAt(0) }],
    });
    const marks = [];
    for (let i = 0; i < 3; i++) marks.push(decisionOf(await request(app.url).get('/').expect(200)).overLimit);
    expect(marks).toEqual([undefined, undefined, 'soft']);
    await request(app.url).get('/').expect(429);
  });

  it('elastic mode lends the overage only while the load is low', async () => {
    let load = 0;
    const throttle = { mode: 'elastic', maxOveragePercent: 100, load: () => load };
    app = await harness.start({
      limits: [{ algorithm: 'fixed-window', limit: 2, window: '1m', throttle, logger, clock: clockAt(0) }],
    });
    const marks = [];
    for (let i = 0; i < 3; i++) marks.push(decisionOf(await request(app.url).get('/').expect(200)).overLimit);
    expect(marks).toEqual([undefined, undefined, 'elastic']);
    load = 1;
    await request(app.url).get('/').expect(429);
  });

  it('shadow mode never refuses, reports what would have happened, and sends no Retry-After', async () => {
    app = await harness.start({
      limits: [
        { algorithm: 'fixed-window', limit: 1, window: '1m', throttle: { mode: 'shadow' }, logger, clock: clockAt(0) },
      ],
    });
    await request(app.url).get('/').expect(200);
    const res = await request(app.url).get('/').expect(200);
    expect(decisionOf(res)).toMatchObject({ allowed: true, overLimit: 'shadow' });
    expect(draft11(res).state['1-per-1m']).toEqual({ r: 0, t: 60 });
    expect(res.headers['retry-after']).toBeUndefined();
  });
});
