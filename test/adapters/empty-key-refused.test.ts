import request from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';
import { harnesses, type RunningApp } from './harness/index.js';
import { clockAt, collectingLogger } from './helpers.js';

// Regression: a `key` function returning '' (a missing header read as `?? ''`) was taken as a
// key, so every client without the header shared one quota.
describe.each(harnesses)('$name: a key function that returns an empty string', (harness) => {
  let app: RunningApp | undefined;
  afterEach(() => app?.close());

  it('fails the request with ERR_SLUICE_INVALID_KEY, counting nothing, as for undefined', async () => {
    const key = (req: unknown) => harness.header(req, 'x-api-key') ?? '';
    const options = { algorithm: 'fixed-window', limit: 1, window: '1m', key, clock: clockAt(0) };
    app = await harness.start({ limits: [{ ...options, logger: collectingLogger() }] });
    await request(app.url).get('/').timeout(2000).expect(500);
    expect(app.errors().at(-1)).toMatchObject({
      code: 'ERR_SLUICE_INVALID_KEY',
      message: expect.stringMatching(
        /Your `key` function returned "" for this request; it must return a non-empty string/,
      ),
    });
    expect(app.hits()).toBe(0);
    // A client that sends the header is counted under it, as before.
    await request(app.url).get('/').set('x-api-key', 'k1').expect(200);
    await request(app.url).get('/').set('x-api-key', 'k1').expect(429);
  });
});
