import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { createMemoryStore } from '@sluice/core';
import { rateLimitPlugin } from '@sluice/fastify';
import { parseRules } from '@sluice/rules';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { clockAt, collectingLogger, parseItems } from './helpers.js';

const ok = async () => 'ok';
const base = { algorithm: 'fixed-window', logger: collectingLogger(), clock: clockAt(0) } as const;

/** Policy names in the RateLimit field of a response, in order. */
async function limitsOn(
  app: FastifyInstance,
  url: string,
): Promise<{ status: number; names: string[]; policy?: string }> {
  const res = await app.inject({ method: 'GET', url });
  const field = res.headers.ratelimit as string | undefined;
  return {
    status: res.statusCode,
    names: field === undefined ? [] : parseItems(field).map((item) => item.name),
    ...(res.headers['ratelimit-policy'] === undefined ? {} : { policy: String(res.headers['ratelimit-policy']) }),
  };
}

describe('fastify: per-route config and encapsulation', () => {
  let app: FastifyInstance;
  afterEach(() => app.close());

  it('lets a route replace the limit with config.rateLimit, or turn it off with false', async () => {
    app = Fastify();
    await app.register(rateLimitPlugin, { ...base, name: 'site', limit: 5, window: '1m' });
    app.get('/login', { config: { rateLimit: { name: 'login', limit: 1, window: '10s' } } }, ok);
    app.get('/health', { config: { rateLimit: false } }, ok);
    app.get('/', ok);
    expect(await limitsOn(app, '/login')).toEqual({ status: 200, names: ['login'], policy: '"login";q=1;w=10' });
    expect((await limitsOn(app, '/login')).status).toBe(429);
    expect((await limitsOn(app, '/')).names).toEqual(['site']);
    for (let i = 0; i < 10; i++) expect(await limitsOn(app, '/health')).toEqual({ status: 200, names: [] });
  });

  // The migration guide maps @fastify/rate-limit's `{ global: false }` to the same: it ran,
  // but its types asked for a limit or rules the plugin does not use then.
  // The plugin's skipSuccessfulRequests beside a route's skipFailedRequests failed the route
  // at start-up (together they would count nothing), and a route could not turn it off.
  it("replaces the plugin's counting by outcome as one choice", async () => {
    app = Fastify();
    const isOk = (_request: unknown, reply: { statusCode: number }) => reply.statusCode < 300;
    await app.register(rateLimitPlugin, {
      ...base,
      limit: 2,
      window: '1m',
      skipSuccessfulRequests: true,
      requestWasSuccessful: isOk,
    });
    app.get('/failing', { config: { rateLimit: { skipFailedRequests: true } } }, async (_request, reply) =>
      reply.code(500).send('down'),
    );
    app.get('/counted', { config: { rateLimit: { skipSuccessfulRequests: false } } }, ok);
    // A real server: a refund follows the response's end on its socket.
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    const statusesOf = async (path: string, count: number) => {
      const statuses = [];
      for (let i = 0; i < count; i++) statuses.push((await fetch(`${url}${path}`)).status);
      return statuses;
    };
    // Failures given back: every call reaches the handler.
    expect(await statusesOf('/failing', 4)).toEqual([500, 500, 500, 500]);
    // Successes counted: the third is refused.
    expect(await statusesOf('/counted', 3)).toEqual([200, 200, 429]);
  });

  it('takes no limit at all with global: false, limiting only routes with their own', async () => {
    app = Fastify();
    await app.register(rateLimitPlugin, { global: false });
    app.get('/limited', { config: { rateLimit: { ...base, limit: 2, window: '1m' } } }, ok);
    app.get('/free', ok);
    for (let i = 0; i < 3; i++) expect(await limitsOn(app, '/free')).toEqual({ status: 200, names: [] });
    const limited = [];
    for (let i = 0; i < 3; i++) limited.push((await limitsOn(app, '/limited')).status);
    expect(limited).toEqual([200, 200, 429]);
    // Routes that do not exist have no limit of their own: `notFound` needs the plugin's.
    const unlimited = Fastify();
    // @ts-expect-error: `global: false` takes no `notFound: true` without a limit
    unlimited.register(rateLimitPlugin, { global: false, notFound: true });
    await expect(unlimited.ready()).rejects.toMatchObject({ code: 'ERR_SLUICE_INVALID_POLICIES' });
  });

  it("inherits the plugin's other options in a route's own limit", async () => {
    app = Fastify();
    await app.register(rateLimitPlugin, { ...base, limit: 5, window: '1m', headers: { standard: 'draft-6' } });
    app.get('/search', { config: { rateLimit: { limit: 2, window: '1m' } } }, ok);
    const res = await app.inject({ method: 'GET', url: '/search' });
    expect(res.headers['ratelimit-limit']).toBe('2');
    expect(res.headers['ratelimit-remaining']).toBe('1');
  });

  // The route's options were tested with `in` and copied whole: `{ key: undefined }`, from a
  // spread of optional settings, keyed by IP where the plugin keyed by user, with no warning.
  it("reads a route option given as undefined as left out, falling back to the plugin's", async () => {
    app = Fastify();
    await app.register(rateLimitPlugin, {
      ...base,
      limit: 5,
      window: '1m',
      key: (request) => `user:${request.headers['x-user']}`,
      headers: { standard: 'draft-6' },
      message: 'slow down',
    });
    const unset = { key: undefined, headers: undefined, onLimited: undefined, statusCode: undefined };
    for (const path of ['/a', '/b'])
      app.get(
        path,
        { config: { rateLimit: { limit: 1, window: '1m', ...unset } } },
        async (request) => request.rateLimit?.key,
      );
    const first = await app.inject({ url: '/a', headers: { 'x-user': 'alice' } });
    expect(first.body).toBe('user:alice');
    expect(first.headers['ratelimit-limit']).toBe('1');
    const refused = await app.inject({ url: '/a', headers: { 'x-user': 'alice' } });
    expect([refused.statusCode, refused.body]).toEqual([429, 'slow down']);
    // Each route keeps a namespace of its own.
    expect((await app.inject({ url: '/b', headers: { 'x-user': 'alice' } })).statusCode).toBe(200);
  });

  // With undefined read as left out, nothing turned the plugin's ban off for one route:
  // `ban: false` was refused.
  it("turns the plugin's ban off for a route with ban: false", async () => {
    app = Fastify();
    await app.register(rateLimitPlugin, { ...base, limit: 1, window: '1m', ban: { after: 0, duration: '1h' } });
    app.get('/banned', ok);
    app.get('/open', { config: { rateLimit: { limit: 1, window: '1m', ban: false } } }, ok);
    const statuses = async (url: string) => {
      const seen = [];
      for (let i = 0; i < 3; i++) seen.push((await app.inject({ url })).statusCode);
      return seen;
    };
    expect(await statuses('/open')).toEqual([200, 429, 429]);
    expect(await statuses('/banned')).toEqual([200, 403, 403]);
  });

  // A route's own rules took the plugin's ban, which rules mode refuses, and nothing the route
  // could give turned it off: the route could not be declared.
  it("gives a route with its own rules none of the plugin's options rules mode does not take", async () => {
    const rules = parseRules(
      'domain: r\ndescriptors:\n  - key: remote_address\n    rate_limit: { unit: minute, requests_per_unit: 1 }\n',
    );
    app = Fastify();
    await app.register(rateLimitPlugin, {
      ...base,
      limit: 5,
      window: '1m',
      ban: { after: 0, duration: '1h' },
      allowList: ['10.0.0.1'],
      skipFailedRequests: true,
    });
    app.get('/r', { config: { rateLimit: { rules } } }, ok);
    expect((await app.inject({ url: '/r' })).statusCode).toBe(200);
    expect((await app.inject({ url: '/r' })).statusCode).toBe(429);
    // Refused by the rule, not banned.
    expect((await app.inject({ url: '/r' })).statusCode).toBe(429);
  });

  // Copied by its own entries, a route's options read through a prototype were dropped unseen
  // and the plugin's limit applied.
  it('refuses a route option read through the prototype, naming the route', async () => {
    app = Fastify();
    await app.register(rateLimitPlugin, { ...base, limit: 5, window: '1m' });
    expect(() => app.get('/x', { config: { rateLimit: Object.create({ limit: 1, window: '1m' }) } }, ok)).toThrow(
      expect.objectContaining({
        code: 'ERR_SLUICE_UNKNOWN_OPTION',
        message: expect.stringContaining('config.rateLimit of GET /x: Option `limit` is inherited'),
      }),
    );
  });

  it("falls back to the plugin's headers field by field: a route asking for legacy keeps the plugin's draft", async () => {
    app = Fastify();
    await app.register(rateLimitPlugin, { ...base, limit: 5, window: '1m', headers: { standard: 'draft-6' } });
    app.get('/legacy', { config: { rateLimit: { headers: { legacy: true } } } }, ok);
    app.get('/off', { config: { rateLimit: { headers: { standard: false } } } }, ok);
    const legacy = await app.inject({ method: 'GET', url: '/legacy' });
    expect(legacy.headers['ratelimit-limit']).toBe('5');
    expect(legacy.headers['x-ratelimit-limit']).toBe('5');
    expect(legacy.headers.ratelimit).toBeUndefined();
    const off = await app.inject({ method: 'GET', url: '/off' });
    expect(off.headers['ratelimit-limit']).toBeUndefined();
    expect(off.headers.ratelimit).toBeUndefined();
  });

  describe('under rules', () => {
    const rules = parseRules(`
domain: api
descriptors:
  - key: remote_address
    policies: [{ name: per-client, limit: 4, window: 1m, algorithm: fixed-window }]
`);
    const statuses = async (url: string, times: number) => {
      const seen: number[] = [];
      for (let i = 0; i < times; i++) seen.push((await app.inject({ method: 'GET', url })).statusCode);
      return seen;
    };

    it("lets a route change the plugin's cost or headers, counting in the same rule (it failed to register)", async () => {
      app = Fastify();
      await app.register(rateLimitPlugin, { rules, clock: clockAt(0), logger: collectingLogger() });
      app.get('/costly', { config: { rateLimit: { cost: 2 } } }, ok);
      app.get('/', ok);
      expect(await statuses('/costly', 2)).toEqual([200, 200]);
      expect(await statuses('/', 1)).toEqual([429]);
    });

    // Fastify answers HEAD with the GET route's handler: HEAD was a way around its rule.
    it("counts a HEAD request under its GET route's rule", async () => {
      app = Fastify();
      const routeRules = parseRules(`
domain: api
descriptors:
  - key: route
    value: GET /items/:id
    policies: [{ name: items, limit: 2, window: 1m, algorithm: fixed-window }]
`);
      const options = { rules: routeRules, descriptors: [['route']], clock: clockAt(0), logger: collectingLogger() };
      await app.register(rateLimitPlugin, options);
      app.get('/items/:id', ok);
      const head = () => app.inject({ method: 'HEAD', url: '/items/1' });
      expect((await head()).statusCode).toBe(200);
      expect(await statuses('/items/2', 1)).toEqual([200]);
      expect((await head()).statusCode).toBe(429);
    });

    it('lets a route of a plugin with global: false take rules of its own', async () => {
      app = Fastify();
      await app.register(rateLimitPlugin, { ...base, limit: 1, window: '1m', global: false });
      app.get('/ruled', { config: { rateLimit: { rules } } }, ok);
      expect(await statuses('/ruled', 5)).toEqual([200, 200, 200, 200, 429]);
    });

    it("lets a route's policy options replace the plugin's rules, and its rules the plugin's policies", async () => {
      app = Fastify();
      await app.register(rateLimitPlugin, { rules, clock: clockAt(0), logger: collectingLogger() });
      app.get('/own', { config: { rateLimit: { limit: 1, window: '1m' } } }, ok);
      expect(await statuses('/own', 2)).toEqual([200, 429]);
      const other = Fastify();
      await other.register(rateLimitPlugin, { ...base, limit: 1, window: '1m', key: () => 'all' });
      other.get('/ruled', { config: { rateLimit: { rules } } }, ok);
      const seen: number[] = [];
      for (let i = 0; i < 5; i++) seen.push((await other.inject({ method: 'GET', url: '/ruled' })).statusCode);
      await other.close();
      expect(seen).toEqual([200, 200, 200, 200, 429]);
    });
  });

  it('limits only the context it is registered in and that context’s children', async () => {
    app = Fastify();
    app.get('/public', ok);
    await app.register(
      async (api) => {
        await api.register(rateLimitPlugin, { ...base, name: 'api', limit: 1, window: '1m' });
        api.get('/items', ok);
        await api.register(async (nested) => nested.get('/nested', ok));
      },
      { prefix: '/api' },
    );
    await app.register(async (sibling) => sibling.get('/sibling', ok));
    expect((await limitsOn(app, '/api/items')).names).toEqual(['api']);
    expect((await limitsOn(app, '/api/items')).status).toBe(429);
    expect((await limitsOn(app, '/api/nested')).names).toEqual(['api']);
    for (const url of ['/public', '/sibling']) expect(await limitsOn(app, url)).toEqual({ status: 200, names: [] });
  });

  it('stacks a registration in a child context on the root one; a route’s own limit still counts once', async () => {
    app = Fastify();
    await app.register(rateLimitPlugin, { ...base, name: 'root', limit: 10, window: '1m' });
    await app.register(async (child) => {
      await child.register(rateLimitPlugin, { ...base, name: 'child', limit: 10, window: '1m' });
      child.get('/both', ok);
      child.get('/own', { config: { rateLimit: { name: 'own', limit: 10, window: '1m' } } }, ok);
    });
    expect((await limitsOn(app, '/both')).names).toEqual(['root', 'child']);
    expect((await limitsOn(app, '/own')).names).toEqual(['own']);
  });

  it('counts the automatic HEAD route in its GET route’s own limit, not in a quota of its own', async () => {
    app = Fastify();
    await app.register(rateLimitPlugin, { ...base, name: 'site', limit: 10, window: '1m' });
    app.get('/report', { config: { rateLimit: { name: 'report', limit: 2, window: '1m' } } }, ok);
    const send = (method: 'GET' | 'HEAD') => app.inject({ method, url: '/report' });
    expect((await send('GET')).statusCode).toBe(200);
    expect((await send('HEAD')).statusCode).toBe(200);
    expect((await send('HEAD')).statusCode).toBe(429);
    expect((await send('GET')).statusCode).toBe(429);
    await app.rateLimiter.route('GET', '/report')?.limiter?.reset('127.0.0.1');
    const [item] = parseItems((await send('HEAD')).headers.ratelimit as string);
    expect([item?.name, item?.params.r]).toEqual(['report', 1]);
  });

  // A prefixed plugin's root GET is made at /api and /api/, the second without `onRoute`, whose
  // automatic HEAD reached it and made a quota of its own.
  it('counts both automatic HEAD routes of a prefixed root GET in its limit', async () => {
    app = Fastify();
    await app.register(rateLimitPlugin, { ...base, name: 'site', limit: 10, window: '1m' });
    await app.register(
      async (api) => {
        api.get('/', { config: { rateLimit: { name: 'root', limit: 2, window: '1m' } } }, ok);
      },
      { prefix: '/api' },
    );
    const send = (method: 'GET' | 'HEAD', url: string) => app.inject({ method, url });
    expect((await send('GET', '/api')).statusCode).toBe(200);
    expect((await send('GET', '/api/')).statusCode).toBe(200);
    for (const url of ['/api', '/api/']) {
      expect([url, (await send('HEAD', url)).statusCode]).toEqual([url, 429]);
    }
    expect(app.rateLimiter.route('GET', '/api/')).toBe(app.rateLimiter.route('GET', '/api'));
  });

  // Sharing the automatic HEAD route's count made a GET and a POST given one config object
  // share a count as well.
  it('counts a GET and a POST given one config object apart, each with its own limit', async () => {
    app = Fastify();
    await app.register(rateLimitPlugin, { ...base, limit: 10, window: '1m' });
    const limited = { config: { rateLimit: { name: 'shared', limit: 1, window: '1m' } } } as const;
    app.get('/x', limited, ok);
    app.post('/x', limited, ok);
    const send = (method: 'GET' | 'POST' | 'HEAD') => app.inject({ method, url: '/x' });
    expect((await send('GET')).statusCode).toBe(200);
    expect((await send('POST')).statusCode).toBe(200);
    expect((await send('HEAD')).statusCode).toBe(429);
    expect((await send('POST')).statusCode).toBe(429);
  });

  // A route's own policies took the app's `maxQueued` along, and with no queue of their own
  // were refused at start-up (ERR_SLUICE_INVALID_QUEUE).
  it('gives a route whose own policies queue nothing none of the app’s maxQueued', async () => {
    app = Fastify();
    const queue = { algorithm: 'gcra', queue: { maxDelayMs: 2000 }, maxQueued: 50 } as const;
    await app.register(rateLimitPlugin, { ...base, ...queue, limit: 10, window: '1s' });
    app.post('/login', { config: { rateLimit: { name: 'login', limit: 5, window: '1m' } } }, ok);
    await app.ready();
    const res = await app.inject({ method: 'POST', url: '/login' });
    expect([res.statusCode, parseItems(res.headers.ratelimit as string)[0]?.params.r]).toEqual([200, 4]);
  });

  it('merges a route’s own limit in a child context with the child’s registration, not the parent’s', async () => {
    app = Fastify();
    await app.register(rateLimitPlugin, { ...base, name: 'root', limit: 10, window: '1m' });
    await app.register(async (child) => {
      await child.register(rateLimitPlugin, {
        ...base,
        name: 'child',
        limit: 10,
        window: '1m',
        key: (request) => String(request.headers['x-user']),
        headers: { standard: 'draft-6' },
      });
      child.get(
        '/own',
        { config: { rateLimit: { limit: 1, window: '1m' } } },
        async (request) => request.rateLimit?.key,
      );
    });
    const as = (user: string) => app.inject({ method: 'GET', url: '/own', headers: { 'x-user': user } });
    const ada = await as('ada');
    expect([ada.statusCode, ada.body, ada.headers['ratelimit-limit']]).toEqual([200, 'ada', '1']);
    expect((await as('ada')).statusCode).toBe(429);
    expect((await as('grace')).statusCode).toBe(200);
    expect(app.rateLimiter.route('GET', '/own')?.limiter).toBeDefined();
  });

  it('with global: false limits only routes that ask, on the plugin’s defaults', async () => {
    app = Fastify();
    await app.register(rateLimitPlugin, { ...base, global: false, limit: 1, window: '1m' });
    app.get('/open', ok);
    app.get('/guarded', { config: { rateLimit: {} } }, ok);
    expect(await limitsOn(app, '/open')).toEqual({ status: 200, names: [] });
    expect((await limitsOn(app, '/guarded')).names).toEqual(['1-per-1m']);
    expect((await limitsOn(app, '/guarded')).status).toBe(429);
  });

  it('runs after app-level onRequest hooks, so a key can come from auth', async () => {
    app = Fastify();
    await app.register(rateLimitPlugin, {
      ...base,
      limit: 1,
      window: '1m',
      key: (request) => `user:${(request as unknown as { user: string }).user}`,
    });
    app.addHook('onRequest', async (request) => {
      (request as unknown as { user: string }).user = String(request.headers['x-user']);
    });
    app.get('/', async (request) => request.rateLimit?.key);
    const as = (user: string) => app.inject({ method: 'GET', url: '/', headers: { 'x-user': user } });
    expect((await as('ada')).body).toBe('user:ada');
    expect((await as('ada')).statusCode).toBe(429);
    expect((await as('grace')).statusCode).toBe(200);
  });

  // Regression: two routes of one method and URL, told apart by a host constraint, shared the
  // namespace of their own limits, so one host's requests spent the other's quota.
  it('counts routes that Fastify tells apart by their constraints apart, each with a handle', async () => {
    app = Fastify();
    await app.register(rateLimitPlugin, { ...base, limit: 100, window: '1m' });
    const own = { config: { rateLimit: { name: 'per-host', limit: 2, window: '1m' } } } as const;
    app.get('/x', { ...own, constraints: { host: 'a.example' } }, async () => 'a');
    app.get('/x', { ...own, constraints: { host: 'b.example' } }, async () => 'b');
    const on = (host: string) => app.inject({ method: 'GET', url: '/x', headers: { host } });
    for (const host of ['a.example', 'a.example', 'b.example', 'b.example']) {
      const res = await on(host);
      expect([res.statusCode, res.body]).toEqual([200, host[0]]);
    }
    expect((await on('a.example')).statusCode).toBe(429);
    const a = app.rateLimiter.route('GET', '/x', { host: 'a.example' });
    const b = app.rateLimiter.route('GET', '/x', { host: 'b.example' });
    expect(a?.limiter?.namespace).toBeDefined();
    expect(a?.limiter?.namespace).not.toBe(b?.limiter?.namespace);
    await a?.limiter?.reset('127.0.0.1');
    expect((await on('a.example')).statusCode).toBe(200);
    expect((await on('b.example')).statusCode).toBe(429);
  });

  it('refuses a bad route config at start-up with a code', async () => {
    app = Fastify();
    await app.register(rateLimitPlugin, { ...base, limit: 1, window: '1m' });
    expect(() => app.get('/bad', { config: { rateLimit: { limit: 0, window: '1m' } } }, ok)).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_LIMIT' }),
    );
    expect(() => app.get('/worse', { config: { rateLimit: 'often' as never } }, ok)).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_OPTION' }),
    );
  });

  // With global: false no hook was made of the plugin's options: a typo registered, and
  // surfaced, if ever, as the first route's.
  it.each([
    ['a misspelt option', { windw: '1m' }, 'ERR_SLUICE_UNKNOWN_OPTION'],
    ['a bad hook', { hook: 'onSend' }, 'ERR_SLUICE_INVALID_OPTION'],
    ['a null hook', { hook: null }, 'ERR_SLUICE_INVALID_OPTION'],
    ['a bad limit', { limit: -1, window: '1m' }, 'ERR_SLUICE_INVALID_LIMIT'],
    ['a bad onLimited', { onLimited: 'x' }, 'ERR_SLUICE_INVALID_HANDLER'],
    // No route takes the plugin's prefix: a bad one, or any, went unseen.
    ['a prefix, which no route takes', { prefix: 'a b/c' }, 'ERR_SLUICE_CONFLICTING_OPTIONS'],
  ])('with global: false refuses %s at registration, naming no route', async (_label, options, code) => {
    app = Fastify();
    const error = await app.register(rateLimitPlugin, { ...base, global: false, ...options } as never).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ code });
    expect((error as Error).message).not.toContain('config.rateLimit');
  });

  // The check of the plugin's options made a limiter of them on the app's store, whose
  // namespace another app's limit of the same policies held: registration failed.
  it('with global: false registers beside another app counting the same policies on one store', async () => {
    const store = createMemoryStore();
    const other = Fastify();
    await other.register(rateLimitPlugin, { ...base, limit: 1, window: '1s', store });
    other.get('/', ok);
    try {
      await other.ready();
      for (const options of [{}, { limit: 1, window: '1s' }] as const) {
        const app2 = Fastify();
        await app2.register(rateLimitPlugin, { clock: base.clock, global: false, store, ...options });
        app2.get('/r', { config: { rateLimit: { limit: 3, window: '1m' } } }, ok);
        await app2.ready();
        expect((await app2.inject('/r')).statusCode).toBe(200);
        await app2.close();
      }
    } finally {
      await other.close();
    }
  });

  // Checked on a store of the check's own, options the app's store refuses passed registration.
  it('with global: false refuses at registration what its store refuses, and part of a policy', async () => {
    const inner = createMemoryStore();
    const noRefunds = {
      name: 'no-refunds',
      refunds: false,
      consume: inner.consume.bind(inner),
      reset: inner.reset.bind(inner),
      refund: inner.refund.bind(inner),
    };
    for (const [options, code] of [
      [{ store: noRefunds, skipFailedRequests: true }, 'ERR_SLUICE_CONFLICTING_OPTIONS'],
      [{ window: '1m' }, 'ERR_SLUICE_INVALID_LIMIT'],
    ] as const) {
      const fresh = Fastify();
      await expect(fresh.register(rateLimitPlugin, { global: false, ...options } as never)).rejects.toMatchObject({
        code,
      });
      await fresh.close();
    }
  });

  it('with global: false gives each warning once, from the route that limits', async () => {
    const warnings: string[] = [];
    const logger = { warn: (message: string) => warnings.push(message) };
    const rules = parseRules(
      'domain: api\ndescriptors:\n  - key: path\n    value: /Login\n    rate_limit: { unit: minute, requests_per_unit: 1 }\n',
    );
    app = Fastify();
    await app.register(rateLimitPlugin, { global: false, rules, descriptors: [['path']], logger });
    app.get('/login', { config: { rateLimit: {} } }, ok);
    await app.ready();
    expect(warnings.filter((w) => w.includes('WRN_SLUICE_RULE_PATH_SPELLING'))).toHaveLength(1);
  });

  it('refuses a null hook, rather than reading it as onRequest', async () => {
    app = Fastify();
    await expect(
      app.register(rateLimitPlugin, { ...base, limit: 1, window: '1m', hook: null } as never),
    ).rejects.toMatchObject({ code: 'ERR_SLUICE_INVALID_OPTION' });
  });

  it('refuses a non-boolean global', async () => {
    app = Fastify();
    await expect(
      app.register(rateLimitPlugin, { ...base, limit: 1, window: '1m', global: 'yes' as never }),
    ).rejects.toMatchObject({
      code: 'ERR_SLUICE_INVALID_OPTION',
    });
  });
});

/** The status of each target sent in turn, as written, over a socket of its own: nothing tidies it. */
async function rawStatuses(app: FastifyInstance, targets: readonly string[]): Promise<string[]> {
  await app.listen({ port: 0, host: '127.0.0.1' });
  try {
    const { port } = app.server.address() as AddressInfo;
    const statusOf = (target: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = connect(port, '127.0.0.1', () => {
          socket.end(`GET ${target} HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n`);
        });
        let reply = '';
        socket.on('data', (chunk: Buffer) => {
          reply += chunk.toString();
        });
        socket.once('end', () => resolve(reply.split(' ')[1] ?? ''));
        socket.once('error', reject);
      });
    const statuses = [];
    for (const target of targets) statuses.push(await statusOf(target));
    return statuses;
  } finally {
    await app.close();
  }
}

/** One request an hour to `/api/login`, for the tests of how the path is read. */
const loginRules = parseRules(`
domain: api
descriptors:
  - key: path
    value: /api/login
    rate_limit: { unit: hour, requests_per_unit: 1 }
`);

/** An app limiting `/api/login` by `loginRules`, made with Fastify's `options`. */
async function loginApp(options: Record<string, unknown> = {}): Promise<FastifyInstance> {
  // Fastify's types leave `useSemicolonDelimiter` out of `routerOptions`, where Fastify reads it.
  const app = Fastify(options as FastifyServerOptions);
  await app.register(rateLimitPlugin, {
    rules: loginRules,
    descriptors: [['path']],
    clock: clockAt(0),
    logger: collectingLogger(),
  });
  app.get('/api/login', ok);
  return app;
}

// With `useSemicolonDelimiter`, Fastify routes `/api/login;x` to `/api/login`: the `path` rule on
// it read `/api/login;x` and counted nothing.
it.each<Record<string, unknown>>([{ useSemicolonDelimiter: true }, { routerOptions: { useSemicolonDelimiter: true } }])(
  "a rule's path ends at a `;` where the router ends it there (%j)",
  async (options) => {
    const app = await loginApp(options);
    const statuses = [];
    for (const url of ['/api/login', '/api/login;x', '/api/login;jsessionid=1?next=/']) {
      statuses.push((await app.inject({ method: 'GET', url })).statusCode);
    }
    expect(statuses).toEqual([200, 429, 429]);
    await app.close();
  },
);

// find-my-way routes an absolute-form target by what follows its host; read through `url.parse`,
// `http://h;x/api/login` was the path `;x/api/login`, and the rule on `/api/login` counted nothing.
it('a rule on a path holds for an absolute-form target, as find-my-way routes it', async () => {
  const app = await loginApp();
  const targets = ['/api/login', 'http://h;x/api/login', 'http://h%41/api/login', "http://h'x/api/login"];
  expect(await rawStatuses(app, targets)).toEqual(['200', '429', '429', '429']);
});

// A `//user@host` run is an authority to Express's mounted routers alone: Fastify with duplicate
// slashes ignored routes `/users//a@b#` to `/users/:id`, where a rule on `/users/*` must count it.
it('a user@host run stays part of the path a parameter route reaches', async () => {
  const users = parseRules(`
domain: api
descriptors:
  - key: path
    value: /users/*
    share_threshold: true
    rate_limit: { unit: hour, requests_per_unit: 1 }
`);
  const app = Fastify({ routerOptions: { ignoreDuplicateSlashes: true } });
  await app.register(rateLimitPlugin, {
    rules: users,
    descriptors: [['path']],
    clock: clockAt(0),
    logger: collectingLogger(),
  });
  app.get('/users/:id', ok);
  expect(await rawStatuses(app, ['/users/a', '/users//a@b#'])).toEqual(['200', '429']);
});
