import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { draft11 } from '../adapters/helpers.js';
import { type ExampleProcess, freePort, printedCurl, runExample } from './example-process.js';

/** examples/per-tier-api, started as examples/README.md says, over real HTTP. */
describe('example per-tier-api: each plan its own limits and windows, keyed after auth', () => {
  let app: ExampleProcess;
  let url: string;

  beforeAll(async () => {
    const port = await freePort();
    app = runExample('per-tier-api', 'start', { env: { PORT: String(port) } });
    await app.waitFor(/per-tier-api on http:\/\/127\.0\.0\.1:\d+/);
    url = `http://127.0.0.1:${port}`;
  });
  afterAll(() => app?.stop());

  it('the printed curl line reaches the pro plan: a 20/s GCRA with a burst of 40, and a daily quota', async () => {
    const curl = printedCurl(app.output());
    expect(curl).toEqual({ method: 'GET', url: `${url}/items`, headers: { 'x-api-key': 'demo-pro-key' } });
    const res = await request(url).get('/items').set(curl.headers).expect(200);
    expect(res.body.plan).toBe('pro');
    expect(res.body.rateLimit.key).toBe('account:globex');
    const { policy, state } = draft11(res);
    expect(policy).toEqual({
      'pro-second': { q: 20, w: 1, 'sluice-burst': 40 },
      'pro-day': { q: 100_000, w: 86_400 },
    });
    expect(state['pro-day']?.r).toBe(99_999);
    // Legacy fields too, as the example asks: the limit they state is the burst `remaining` counts down from.
    expect(res.headers['x-ratelimit-limit']).toBe('40');
  });

  it('the free plan: an export costs 10 of its 60 a minute until the minute is spent', async () => {
    const free = { 'x-api-key': 'demo-free-key' };
    const remaining: number[] = [];
    for (let i = 0; i < 6; i++)
      remaining.push((await request(url).get('/export').set(free).expect(200)).body.remaining);
    expect(remaining).toEqual([50, 40, 30, 20, 10, 0]);
    const refused = await request(url).get('/items').set(free).expect(429);
    expect(refused.body['violated-policies']).toEqual(['free-minute']);
    expect(draft11(refused).state['free-day']?.r).toBe(1_000 - 60);
  });

  it('callers without a known key share the anonymous plan per IP: 10 a minute', async () => {
    for (let i = 0; i < 10; i++) await request(url).get('/items').expect(200);
    const refused = await request(url).get('/items').set('x-api-key', 'not-a-key').expect(429);
    expect(Object.keys(draft11(refused).policy)).toEqual(['anonymous']);
    expect(refused.headers['retry-after']).toMatch(/^[1-9]\d*$/);
  });

  it('/health is skipped: neither counted nor limited, no RateLimit fields', async () => {
    const res = await request(url).get('/health').expect(200);
    expect(res.headers.ratelimit).toBeUndefined();
    expect(res.headers['ratelimit-policy']).toBeUndefined();
  });
});
