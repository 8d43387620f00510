import { parseRules } from '@sluice/rules';
import request from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';
import { harnesses, type RunningApp } from '../harness/index.js';
import { clockAt, collectingLogger, decisionOf, draft11 } from '../helpers.js';

describe.each(harnesses)('$name: one limiter reached twice by one request', (harness) => {
  let app: RunningApp | undefined;
  afterEach(() => app?.close());

  it('counts the request once and reports its policy once', async () => {
    app = await harness.start({
      mountTwice: true,
      limits: [
        {
          name: 'api',
          algorithm: 'fixed-window',
          limit: 4,
          window: '1m',
          logger: collectingLogger(),
          clock: clockAt(0),
        },
      ],
    });
    for (const remaining of [3, 2, 1, 0]) {
      const res = await request(app.url).get('/').expect(200);
      expect(decisionOf(res).remaining).toBe(remaining);
      expect(draft11(res).state).toEqual({ api: { r: remaining, t: 60 } });
      expect(res.headers.ratelimit).toBe(`"api";r=${remaining};t=60`);
    }
    await request(app.url).get('/').expect(429);
    expect(app.hits()).toBe(4);
  });

  it('counts the request once in rules mode too', async () => {
    const rules = parseRules(`
domain: api
descriptors:
  - key: remote_address
    policies: [{ name: per-client, limit: 2, window: 1m, algorithm: fixed-window }]
`);
    app = await harness.start({
      mountTwice: true,
      limits: [{ rules, descriptors: [['remote_address']], logger: collectingLogger(), clock: clockAt(0) }],
    });
    for (const remaining of [1, 0]) {
      const res = await request(app.url).get('/').expect(200);
      expect(draft11(res).state).toEqual({ 'per-client': { r: remaining, t: 60 } });
    }
    await request(app.url).get('/').expect(429);
    expect(app.hits()).toBe(2);
  });
});
