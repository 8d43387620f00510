import { createServer } from 'node:http';
import type { OnStoreError, RateLimitStore } from '@sluice/core';
import { rateLimit } from '@sluice/express';
import express from 'express';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { collectingLogger, onLoopback } from './helpers.js';

// A hook or a store that fails with a value no `String()` can turn into text (an object with no
// prototype, a `toString` that throws) made the message that reports it throw in turn, out of
// the handler that caught the failure: an unhandled rejection that ended the process, a 500
// where a hook's failure must change nothing, a 500 under a fail-open policy.
const unprintable = () => Object.create(null) as object;

const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);
beforeEach(() => {
  unhandled.length = 0;
  process.on('unhandledRejection', onUnhandled);
});
afterEach(async () => {
  await new Promise((resolve) => setImmediate(resolve));
  process.off('unhandledRejection', onUnhandled);
  expect(unhandled).toEqual([]);
});

/** Status of one GET through `limiter` on a real server, and what the logger received. */
async function statusThrough(limiter: express.RequestHandler, route = '/'): Promise<number> {
  const app = express();
  app.use(limiter);
  app.get('/', (_req, res) => {
    res.send('ok');
  });
  app.get('/fail', (_req, res) => {
    res.status(500).send('failed');
  });
  const { url, close } = await onLoopback(createServer(app));
  try {
    return (await fetch(`${url}${route}`)).status;
  } finally {
    await close();
  }
}

it('a notification hook that fails so, sync or async, is ignored and logged', async () => {
  for (const hook of [
    () => {
      throw unprintable();
    },
    async () => {
      throw unprintable();
    },
  ]) {
    const logger = collectingLogger();
    expect(await statusThrough(rateLimit({ limit: 5, window: '1m', logger, onExceeding: hook }))).toBe(200);
    await new Promise((resolve) => setImmediate(resolve));
    expect(logger.messages.join('\n')).toContain('`onExceeding` failed and was ignored: an object');
  }
});

it('a requestWasSuccessful that rejects so leaves the request counted, logged', async () => {
  const logger = collectingLogger();
  const limiter = rateLimit({
    limit: 5,
    window: '1m',
    logger,
    skipFailedRequests: true,
    requestWasSuccessful: async () => {
      throw unprintable();
    },
  });
  expect(await statusThrough(limiter, '/fail')).toBe(500);
  for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
  expect(logger.codes()).toContain('WRN_SLUICE_CALLBACK_FAILED');
  expect((await limiter.limiter?.peek('127.0.0.1'))?.remaining).toBe(4);
});

it.each([
  ['allow', 200],
  ['deny', 503],
] as const)(
  'a store that rejects so, under %s, follows the fail policy',
  async (onStoreError: OnStoreError, status) => {
    const store: RateLimitStore = {
      name: 'unprintable',
      consume: () => Promise.reject(unprintable()),
      reset: () => Promise.reject(unprintable()),
      refund: () => Promise.reject(unprintable()),
    };
    const logger = collectingLogger();
    expect(await statusThrough(rateLimit({ limit: 5, window: '1m', store, onStoreError, logger }))).toBe(status);
    expect(logger.messages.join('\n')).toContain('store "unprintable" failed (an object)');
  },
);
