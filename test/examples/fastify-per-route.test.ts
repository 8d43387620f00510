import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { draft11 } from '../adapters/helpers.js';
import { type ExampleProcess, freePort, printedCurl, runExample } from './example-process.js';

/** examples/fastify-per-route, started as examples/README.md says, over real HTTP. */
describe('example fastify-per-route: plugin-wide, per-route, none, and an encapsulated scope', () => {
  let app: ExampleProcess;
  let url: string;

  beforeAll(async () => {
    const port = await freePort();
    app = runExample('fastify-per-route', 'start', { env: { PORT: String(port) } });
    await app.waitFor(/fastify-per-route on http:\/\/127\.0\.0\.1:\d+/);
    url = `http://127.0.0.1:${port}`;
  });
  afterAll(() => app?.stop());

  it('/health has no limit', async () => {
    const res = await request(url).get('/health').expect(200);
    expect(res.headers.ratelimit).toBeUndefined();
  });

  it('the printed curl line logs in under the route own sliding log alone: 5 per 15 min', async () => {
    expect(printedCurl(app.output())).toEqual({ method: 'POST', url: `${url}/login`, headers: {} });
    const left: number[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await request(url).post('/login').expect(200);
      expect(draft11(res).policy).toEqual({ login: { q: 5, w: 900 } });
      left.push(res.body.attemptsLeft);
    }
    expect(left).toEqual([4, 3, 2, 1, 0]);
    const refused = await request(url).post('/login').expect(429);
    expect(refused.body['violated-policies']).toEqual(['login']);
  });

  it('/admin/stats carries the plugin-wide limit and the scope own, with legacy fields', async () => {
    const res = await request(url).get('/admin/stats').expect(200);
    const { policy, state } = draft11(res);
    expect(policy).toEqual({ '100-per-1m': { q: 100, w: 60 }, admin: { q: 10, w: 60 } });
    // The logins counted in their own limit only.
    expect(state['100-per-1m']?.r).toBe(99);
    expect(res.headers['x-ratelimit-limit']).toBe('10');
  });

  it('/search shapes a burst: 10 at once, the rest held in turn up to 2 s, beyond that refused', async () => {
    const responses = await Promise.all(Array.from({ length: 40 }, () => request(url).get('/search')));
    const passed = responses.filter((r) => r.status === 200);
    const waits = passed.map((r) => r.body.waitedMs as number);
    expect(waits.filter((ms) => ms === 0).length).toBeGreaterThanOrEqual(10);
    expect(waits.filter((ms) => ms > 0).length).toBeGreaterThanOrEqual(15);
    expect(Math.max(...waits)).toBeLessThanOrEqual(2_000);
    expect(responses.filter((r) => r.status === 429).length).toBeGreaterThan(0);
    expect(passed.length + responses.filter((r) => r.status === 429).length).toBe(40);
  });
});
