import { readFileSync } from 'node:fs';
import { get, request as httpRequest } from 'node:http';
import { fileURLToPath } from 'node:url';
import { parseRules } from '@sluice/rules';
import request from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';
import { harnesses, type RunningApp } from '../harness/index.js';
import { clockAt, collectingLogger, decisionOf, draft11 } from '../helpers.js';

const envoyEdge = parseRules(
  readFileSync(fileURLToPath(new URL('../../rules/fixtures/envoy-edge.yaml', import.meta.url)), 'utf8'),
);

/** Per client, plus a tighter limit on one path per user: a request matches up to three rules. */
const layered = parseRules(`
domain: api
descriptors:
  - key: remote_address
    policies: [{ name: per-client, limit: 5, window: 1m, algorithm: fixed-window }]
  - key: path
    value: /other
    descriptors:
      - key: header.x-user
        policies: [{ name: other-per-user, limit: 2, window: 1m, algorithm: fixed-window }]
  - key: header.x-user
    value: free-rider
    rate_limit: { unlimited: true }
`);
const layeredDescriptors = [['remote_address'], ['path', 'header.x-user'], ['header.x-user']];

describe.each(harnesses)('$name: rules in place of policies', (harness) => {
  let app: RunningApp | undefined;
  afterEach(() => app?.close());
  const logger = collectingLogger();

  it('an envoyproxy/ratelimit config limits the same requests: 10 per second per address, one address blocked', async () => {
    const clock = clockAt(0);
    app = await harness.start({ limits: [{ rules: envoyEdge, clock, logger }], trust: 'loopback' });
    const from = (ip: string) =>
      request((app as RunningApp).url)
        .get('/')
        .set('x-forwarded-for', ip);
    for (let i = 0; i < 10; i++) await from('203.0.113.7').expect(200);
    const refused = await from('203.0.113.7').expect(429);
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.body['violated-policies']).toEqual(['per-second']);
    await from('203.0.113.8').expect(200);
    // IPv6 clients of one /56 share a counter, as with the default key.
    for (let i = 0; i < 10; i++) await from(`2001:db8:abcd:12${i}0::1`).expect(200);
    await from('2001:db8:abcd:12ff::1').expect(429);
    const blocked = await from('50.0.0.5').expect(429);
    expect(blocked.body['violated-policies']).toEqual(['blocked']);
    // No wait lifts a block: told to retry in a second, a client was refused again every second.
    expect(blocked.headers['retry-after']).toBeUndefined();
    expect(blocked.body.detail).toBe('A rule refuses every such request (its limit is 0); it can never pass as it is.');
    clock.advance(1000);
    await from('203.0.113.7').expect(200);
    await from('50.0.0.5').expect(429);
  });

  it('a rule on a path holds for every spelling a router may take for it', async () => {
    app = await harness.start({
      limits: [{ rules: layered, descriptors: layeredDescriptors, clock: clockAt(0), logger }],
    });
    const { port } = new URL(app.url);
    // Sent as written: a client library would tidy `/x/../other` before sending it.
    const statusOf = (path: string) =>
      new Promise<number | undefined>((resolve, reject) => {
        get({ host: '127.0.0.1', port, path, headers: { 'x-user': 'bea' } }, (res) => {
          res.resume();
          resolve(res.statusCode);
        }).once('error', reject);
      });
    const spellings = ['/OTHER', '/other/', '/%6fther', '//other', '/Other?page=2', '/other#x'];
    const statuses = [];
    for (const path of spellings) statuses.push(await statusOf(path));
    // other-per-user allows 2 a minute, whichever spelling asks.
    expect(statuses.slice(0, 2)).not.toContain(429);
    expect(statuses.slice(2)).toEqual([429, 429, 429, 429]);
  });

  // Dot segments were resolved: `/api/..`, which every router routes to `/api/:id` with the id
  // `..`, read as `/` and passed a `/api/*` rule by.
  it('counts a path with dot segments as the router reads it, so a wildcard rule holds', async () => {
    const rules = parseRules(`
domain: api
descriptors:
  - key: path
    value: /api/*
    share_threshold: true
    rate_limit: { unit: hour, requests_per_unit: 1 }
`);
    app = await harness.start({ limits: [{ rules, descriptors: [['path']], clock: clockAt(0), logger }] });
    const statuses = [];
    for (const path of ['/api/1', '/api/..', '/api/%2e%2e', '/api/.', '/api/..%2f'])
      statuses.push(await rawStatus(app, path));
    // The app routes none of them (404): the limit, ahead of the routes, counts each.
    expect(statuses).toEqual([404, 429, 429, 429, 429]);
  });

  // Node joins a header sent twice (`K, junk`): each repeat gave the client a counter of its own.
  it("keys a header's descriptor by its first value when the header is sent more than once", async () => {
    const rules = parseRules(`
domain: api
descriptors:
  - key: header.x-api-key
    rate_limit: { unit: minute, requests_per_unit: 1 }
`);
    app = await harness.start({ limits: [{ rules, descriptors: [['header.x-api-key']], clock: clockAt(0), logger }] });
    const { port } = new URL(app.url);
    const send = (...values: string[]) =>
      new Promise<number | undefined>((resolve, reject) => {
        const req = httpRequest({ host: '127.0.0.1', port, path: '/' }, (res) => {
          res.resume();
          resolve(res.statusCode);
        });
        for (const value of values) req.appendHeader('x-api-key', value);
        req.once('error', reject).end();
      });
    expect(await send('K')).toBe(200);
    expect(await send('K', 'junk-1')).toBe(429);
    expect(await send('K', 'junk-2')).toBe(429);
  });

  // A field that threw after one whose promise had rejected left that rejection unheard, and
  // Node ended the process on it.
  it('answers a request whose fields reject and throw alike through the framework, the process alive', async () => {
    const rules = parseRules(
      'domain: api\ndescriptors:\n  - key: user\n    rate_limit: { unit: hour, requests_per_unit: 3 }\n',
    );
    const fields = {
      user: () => Promise.reject(new Error('session store down')),
      tier: () => {
        throw new Error('tier bug');
      },
    };
    app = await harness.start({
      limits: [{ rules, descriptors: [['user'], ['tier', 'user']], fields, clock: clockAt(0), logger }],
    });
    expect((await request(app.url).get('/')).status).toBe(500);
    expect((await request(app.url).get('/')).status).toBe(500);
  });

  it('several matched rules: one all-or-nothing decision, one header item per matched policy', async () => {
    app = await harness.start({
      limits: [{ rules: layered, descriptors: layeredDescriptors, clock: clockAt(0), logger }],
    });
    const get = (path: string, user: string) =>
      request((app as RunningApp).url)
        .get(path)
        .set('x-user', user);
    const first = await get('/other', 'ada').expect(200);
    expect(draft11(first).policy).toEqual({ 'per-client': { q: 5, w: 60 }, 'other-per-user': { q: 2, w: 60 } });
    expect(draft11(first).state).toMatchObject({ 'per-client': { r: 4 }, 'other-per-user': { r: 1 } });
    await get('/other', 'ada').expect(200);
    const refused = await get('/other', 'ada').expect(429);
    expect(refused.body['violated-policies']).toEqual(['other-per-user']);
    // The refusal spent nothing: the per-client rule still has 3 left, and says so.
    expect(draft11(refused).state['per-client']?.r).toBe(3);
    const next = await get('/', 'ada').expect(200);
    expect(Object.keys(draft11(next).state)).toEqual(['per-client']);
    expect(decisionOf(next)).toMatchObject({ allowed: true, remaining: 2 });
    // An unlimited match adds nothing; the other rules still apply.
    await get('/', 'free-rider').expect(200);
    await get('/', 'free-rider').expect(200);
    await get('/', 'free-rider').expect(429);
  });

  // The figures were worked out from the charged ones: a queued charge (no quota before it or
  // after) showed r=1 and its charged reset, a burst above the rate showed r capped at the rate.
  it("a refusal shows each other rule's quota as it stands once its charge is given back", async () => {
    const rules = parseRules(`
domain: api
descriptors:
  - key: path
    value: /other
    policies: [{ name: x-per-min, limit: 1, window: 1m, algorithm: fixed-window }]
  - key: method
    value: GET
    policies:
      - { name: b, limit: 2, window: 1m, burst: 5, algorithm: token-bucket }
      - { name: q, limit: 1, window: 2s, algorithm: gcra, queue: { maxDelayMs: 5000 } }
`);
    const clock = clockAt(0);
    app = await harness.start({ limits: [{ rules, descriptors: [['path'], ['method']], clock, logger }] });
    const url = (app as RunningApp).url;
    expect(draft11(await request(url).get('/other').expect(200)).state).toMatchObject({ b: { r: 4 }, q: { r: 0 } });
    clock.advance(2000);
    expect(draft11(await request(url).get('/').expect(200)).state).toMatchObject({ b: { r: 3 }, q: { r: 0, t: 2 } });
    // Refused by x-per-min: b's charge and q's queued one are given back, and the field says
    // what is left, as the next request finds it.
    const refused = await request(url).get('/other').expect(429);
    expect(refused.body['violated-policies']).toEqual(['x-per-min']);
    expect(draft11(refused).state).toMatchObject({ b: { r: 3 }, q: { r: 0, t: 2 } });
  });

  // As in policies mode: written before the hold, the fields overstated each wait by it.
  it("writes a held request's RateLimit fields as of the end of its hold", async () => {
    const rules = parseRules(`
domain: api
descriptors:
  - key: method
    value: GET
    policies: [{ name: q, limit: 50, window: 1s, algorithm: gcra, queue: { maxDelayMs: 50 } }]
  - key: header.x-s
    shadow_mode: true
    policies: [{ name: s, limit: 1, window: 1020ms, algorithm: gcra }]
`);
    const descriptors = [['method'], ['header.x-s']];
    app = await harness.start({ limits: [{ rules, descriptors, clock: clockAt(0), logger }] });
    const url = (app as RunningApp).url;
    for (let i = 0; i < 49; i++) await request(url).get('/').expect(200);
    await request(url).get('/').set('x-s', 'k').expect(200);
    // Held 20 ms, and over the shadow rule's limit, whose wait (1020 ms) is stated too.
    const held = await request(url).get('/').set('x-s', 'k').expect(200);
    expect(decisionOf(held).delayMs).toBe(20);
    expect(draft11(held).state).toMatchObject({ q: { r: 0, t: 1 }, s: { r: 0, t: 1 } });
  });

  it('a request no rule matches passes with no headers and no decision', async () => {
    app = await harness.start({
      limits: [{ rules: layered, descriptors: [['header.x-user']], clock: clockAt(0), logger }],
    });
    const res = await request(app.url).get('/').set('x-user', 'ada').expect(200);
    expect(res.headers.ratelimit).toBeUndefined();
    expect(decisionOf(res)).toBeNull();
  });

  it("quota_mode rules refuse only together, as envoyproxy/ratelimit's quota mode", async () => {
    const quota = parseRules(`
domain: api
descriptors:
  - key: remote_address
    quota_mode: true
    policies: [{ name: quota-a, limit: 1, window: 1m, algorithm: fixed-window }]
  - key: header.x-user
    quota_mode: true
    policies: [{ name: quota-b, limit: 2, window: 1m, algorithm: fixed-window }]
`);
    app = await harness.start({
      limits: [{ rules: quota, descriptors: [['remote_address'], ['header.x-user']], clock: clockAt(0), logger }],
    });
    const get = () =>
      request((app as RunningApp).url)
        .get('/')
        .set('x-user', 'ada');
    await get().expect(200);
    // quota-a is spent, quota-b is not: the request passes and only quota-b is charged.
    const second = await get().expect(200);
    expect(draft11(second).state).toMatchObject({ 'quota-a': { r: 0 }, 'quota-b': { r: 0 } });
    const refused = await get().expect(429);
    expect(refused.body['violated-policies']).toEqual(['quota-a', 'quota-b']);
  });

  it('a field giving something other than a string fails that request with a code, and counts nothing', async () => {
    app = await harness.start({
      limits: [
        {
          rules: layered,
          descriptors: [['remote_address'], ['header.x-user']],
          fields: { 'header.x-user': () => 42 },
          clock: clockAt(0),
          logger,
        },
      ],
    });
    const res = await request(app.url).get('/');
    expect(res.status).toBe(500);
    expect(res.headers.ratelimit).toBeUndefined();
  });

  it('bad rules options fail at construction with a code', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ rules: {} }, 'ERR_SLUICE_INVALID_OPTION'],
      // A path where the parsed set belongs (every string has a `match` method).
      [{ rules: './rules.yaml' }, 'ERR_SLUICE_INVALID_OPTION'],
      [{ rules: { current: './rules.yaml' } }, 'ERR_SLUICE_INVALID_OPTION'],
      [{ rules: { match: () => [] } }, 'ERR_SLUICE_INVALID_OPTION'],
      [{ rules: layered, domain: 42 }, 'ERR_SLUICE_INVALID_OPTION'],
      [{ rules: layered, descriptors: [['nope']] }, 'ERR_SLUICE_INVALID_OPTION'],
      [{ rules: layered, fields: { user: 'x' } }, 'ERR_SLUICE_INVALID_OPTION'],
      // A list is an object too: `fields: ['user']` gave no field and said nothing of it.
      [{ rules: layered, fields: [] }, 'ERR_SLUICE_INVALID_OPTION'],
      [{ rules: layered, limit: 5 }, 'ERR_SLUICE_CONFLICTING_OPTIONS'],
      [{ rules: layered, key: () => 'k' }, 'ERR_SLUICE_CONFLICTING_OPTIONS'],
      [{ rules: layered, descripters: [] }, 'ERR_SLUICE_UNKNOWN_OPTION'],
    ];
    for (const [options, code] of cases) {
      await expect(harness.configure(options)).rejects.toMatchObject({ code });
    }
  });
});

describe.each(harnesses.filter((h) => h.name !== 'koa'))('$name: the route descriptor is the pattern', (harness) => {
  let app: RunningApp | undefined;
  afterEach(() => app?.close());

  it('a route-level limiter sends the matched pattern, never the raw URL', async () => {
    const rules = parseRules(`
domain: api
descriptors:
  - key: route
    value: GET /items/:id
    policies: [{ name: items, limit: 2, window: 1m, algorithm: fixed-window }]
`);
    app = await harness.start({
      routeLimits: { '/items/:id': { rules, descriptors: [['route']], clock: clockAt(0) } },
    });
    const url = (app as RunningApp).url;
    // Two ids, one pattern: one counter.
    expect(draft11(await request(url).get('/items/1').expect(200)).state.items?.r).toBe(1);
    await request(url).get('/items/2').expect(200);
    await request(url).get('/items/3').expect(429);
  });
});

/** The status of a GET of `path` sent as written: a client library tidies `/x/..` before sending it. */
function rawStatus(app: RunningApp, path: string): Promise<number | undefined> {
  const { port } = new URL(app.url);
  return new Promise((resolve, reject) => {
    get({ host: '127.0.0.1', port, path }, (res) => {
      res.resume();
      resolve(res.statusCode);
    }).once('error', reject);
  });
}
