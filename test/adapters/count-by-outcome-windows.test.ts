import type { AddressInfo } from 'node:net';
import { createMemoryStore, type RateLimitStore } from '@sluice/core';
import { rateLimit } from '@sluice/express';
import express from 'express';
import { expect, it } from 'vitest';
import { clockAt, collectingLogger } from './helpers.js';

// A refund carried no time of its charge: one landing after the window that charged it had
// ended came out of the new window's count, so a request failing across the boundary left its
// client a unit more there (several such requests, several units). Dated by its charge now, it
// gives back nothing to a fixed window, which no longer counts the charge's window, the unit
// to the counter's window before, which it still weighs, and to gcra what has not refilled.
it.each([
  ['fixed-window', 2],
  ['sliding-window-counter', 2],
  ['gcra', 2],
] as const)(
  '%s: a request that fails across a window boundary is not refunded from the next window',
  async (algorithm, left) => {
    const clock = clockAt(59_000);
    const options = { limit: 4, window: '1m', algorithm, clock } as const;
    // The failed request's outcome is judged once the next window has begun and two requests
    // have been counted in it.
    const remaining = await leftAfterFailure(options, async (url) => {
      clock.advance(2_000);
      for (let i = 0; i < 2; i++) await fetch(`${url}/`);
    });
    expect(remaining).toBe(left);
  },
);

/**
 * The quota left, under `skipFailedRequests`, after one request to `/fail` (a 500) whose outcome
 * is judged once `meanwhile` has run; the refund, if made, has landed by then.
 */
async function leftAfterFailure(
  options: Parameters<typeof rateLimit>[0],
  meanwhile: (url: string) => Promise<void>,
): Promise<number | undefined> {
  let url = '';
  let judged: () => void = () => {};
  const judging = new Promise<void>((resolve) => {
    judged = resolve;
  });
  const limiter = rateLimit({
    ...options,
    logger: collectingLogger(),
    skipFailedRequests: true,
    requestWasSuccessful: async (_req, res) => {
      if (res.statusCode < 400) return true;
      await meanwhile(url);
      judged();
      return false;
    },
  });
  const app = express();
  app.use(limiter);
  app.get('/fail', (_req, res) => {
    res.status(500).send('failed');
  });
  app.get('/', (_req, res) => {
    res.send('ok');
  });
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    expect((await fetch(`${url}/fail`)).status).toBe(500);
    await judging;
    // The refund, had it been made, lands in these turns of the event loop (the memory store).
    for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
    return (await limiter.limiter?.peek('127.0.0.1'))?.remaining;
  } finally {
    server.closeAllConnections();
    server.close();
  }
}

// Read when the refund was due, a clock that threw did so in the response's `close` listener,
// an unhandled rejection that ended the process; it is the refund's failure, as before.
it('a clock that throws when a refund is due leaves the request counted, the process alive', async () => {
  const unhandled: unknown[] = [];
  const listener = (reason: unknown) => unhandled.push(reason);
  process.on('unhandledRejection', listener);
  const clock = clockAt(0);
  let broken = false;
  let judged: () => void = () => {};
  const judging = new Promise<void>((resolve) => {
    judged = resolve;
  });
  const limiter = rateLimit({
    limit: 4,
    window: '1m',
    algorithm: 'fixed-window',
    clock: () => {
      if (broken) throw new Error('time source unavailable');
      return clock();
    },
    logger: collectingLogger(),
    skipFailedRequests: true,
    requestWasSuccessful: (_req, res) => {
      broken = true;
      judged();
      return res.statusCode < 400;
    },
  });
  const app = express();
  app.use(limiter);
  app.get('/fail', (_req, res) => {
    res.status(500).send('failed');
  });
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  try {
    expect((await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/fail`)).status).toBe(500);
    await judging;
    for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(unhandled).toEqual([]);
    broken = false;
    expect((await limiter.limiter?.peek('127.0.0.1'))?.remaining).toBe(3);
  } finally {
    process.off('unhandledRejection', listener);
    server.closeAllConnections();
    server.close();
  }
});

// A refund was dated when the store's answer came back: an answer that crossed a window
// boundary dated a charge made before it in the next window, whose count the refund then took a
// later request's unit from (3 passed in a window of 2, a reviewer's probe on Redis).
it('a charge is dated before the store is asked: an answer that crosses a window boundary moves no refund', async () => {
  const clock = clockAt(59_999);
  const inner = createMemoryStore();
  let crossed = false;
  const store: RateLimitStore = {
    name: 'slow',
    consume: async (request) => {
      const reply = await inner.consume(request);
      // The first answer arrives once the window has turned.
      if (!crossed) clock.advance(1);
      crossed = true;
      return reply;
    },
    reset: (...args) => inner.reset(...args),
    refund: (request) => inner.refund(request),
  };
  const options = { limit: 2, window: '1m', algorithm: 'fixed-window', store, clock } as const;
  const remaining = await leftAfterFailure(options, async (url) => {
    for (let i = 0; i < 2; i++) expect((await fetch(`${url}/`)).status).toBe(200);
  });
  expect(remaining).toBe(0);
});
