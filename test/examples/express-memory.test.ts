import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { draft11 } from '../adapters/helpers.js';
import { type ExampleProcess, freePort, printedCurl, runExample } from './example-process.js';

/** examples/express-memory, started as examples/README.md says, over real HTTP. */
describe('example express-memory: an app-wide limit and a two-policy login limit', () => {
  let app: ExampleProcess;
  let url: string;

  beforeAll(async () => {
    const port = await freePort();
    app = runExample('express-memory', 'start', { env: { PORT: String(port) } });
    await app.waitFor(/express-memory on http:\/\/127\.0\.0\.1:\d+/);
    url = `http://127.0.0.1:${port}`;
  });
  afterAll(() => app?.stop());

  it('the printed curl line logs in, under both limits, their RateLimit items appended', async () => {
    const curl = printedCurl(app.output());
    expect(curl).toEqual({ method: 'POST', url: `${url}/login`, headers: {} });
    const first = await request(url).post('/login').expect(200);
    expect(first.body).toEqual({ ok: true, attemptsLeft: 4 });
    const { policy, state } = draft11(first);
    expect(policy).toEqual({
      '100-per-1m': { q: 100, w: 60 },
      'login-burst': { q: 5, w: 60 },
      'login-daily': { q: 50, w: 86_400 },
    });
    expect(state['100-per-1m']?.r).toBe(99);
    expect(state['login-burst']?.r).toBe(4);
    expect(state['login-daily']?.r).toBe(49);
  });

  it('the sixth login in a minute is refused with a problem document naming login-burst', async () => {
    for (let i = 0; i < 4; i++) await request(url).post('/login').expect(200);
    const refused = await request(url).post('/login').expect(429);
    expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect(refused.body['violated-policies']).toEqual(['login-burst']);
    // A refusal spends nothing: the daily quota still shows the five that passed.
    expect(draft11(refused).state['login-daily']?.r).toBe(45);
  });

  it('other routes carry the app-wide limit alone, counted per client IP', async () => {
    const res = await request(url).get('/').expect(200);
    expect(Object.keys(draft11(res).policy)).toEqual(['100-per-1m']);
    expect(res.body.rateLimit).toMatchObject({ allowed: true, limit: 100, key: '127.0.0.1' });
    // Seven requests went through the app-wide limiter before this one: six logins and this.
    expect(res.body.rateLimit.remaining).toBe(100 - 7);
  });
});
