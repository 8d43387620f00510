import { type Item, parseDictionary, parseList } from 'structured-headers';
import request from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';
import { harnesses, type RunningApp } from './harness/index.js';
import { clockAt, collectingLogger, draft11 } from './helpers.js';

// Regression: limiters of different header drafts on one request broke the `RateLimit` field:
// draft-7's Dictionary replaced draft-11's items, or draft-11's items were appended to it, which
// no structured-field parser accepts. The first draft written on a request keeps the fields.
describe.each(harnesses)('$name: limiters with different header drafts on one request', (harness) => {
  let app: RunningApp | undefined;
  afterEach(() => app?.close());

  const global = { algorithm: 'fixed-window', limit: 10, window: '1m', clock: clockAt(0) };
  const route = { algorithm: 'fixed-window', limit: 5, window: '1m', clock: clockAt(0) };

  it('draft-11 first: its items stay whole, the draft-7 limiter writes none and warns once', async () => {
    const logger = collectingLogger();
    app = await harness.start({
      limits: [{ ...global, logger: collectingLogger() }],
      routeLimits: { '/limited': { ...route, logger, headers: { standard: 'draft-7' } } },
    });
    for (let i = 0; i < 2; i++) {
      const res = await request(app.url).get('/limited').expect(200);
      const { policy, state } = draft11(res);
      expect(policy).toEqual({ '10-per-1m': { q: 10, w: 60 } });
      expect(state).toEqual({ '10-per-1m': { r: 9 - i, t: 60 } });
    }
    expect(logger.codes()).toEqual(['WRN_SLUICE_MIXED_HEADER_DRAFTS']);
  });

  it('draft-7 first: its Dictionary stays parseable, the draft-11 limiter writes none and warns once', async () => {
    const logger = collectingLogger();
    app = await harness.start({
      limits: [{ ...global, logger: collectingLogger(), headers: { standard: 'draft-7' } }],
      routeLimits: { '/limited': { ...route, logger } },
    });
    const res = await request(app.url).get('/limited').expect(200);
    const fields = Object.fromEntries([...parseDictionary(res.headers.ratelimit as string)].map(([k, [v]]) => [k, v]));
    expect(fields).toEqual({ limit: 10, remaining: 9, reset: 60 });
    expect(parseList(res.headers['ratelimit-policy'] as string).map((m) => (m as Item)[0])).toEqual([10]);
    expect(logger.codes()).toEqual(['WRN_SLUICE_MIXED_HEADER_DRAFTS']);
  });

  it('limiters of one draft still append their items, without a warning', async () => {
    const logger = collectingLogger();
    app = await harness.start({
      limits: [{ ...global, logger }],
      routeLimits: { '/limited': { ...route, logger } },
    });
    const { state } = draft11(await request(app.url).get('/limited').expect(200));
    expect(state).toEqual({ '10-per-1m': { r: 9, t: 60 }, '5-per-1m': { r: 4, t: 60 } });
    expect(logger.messages).toEqual([]);
  });
});
