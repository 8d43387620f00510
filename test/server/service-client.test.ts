import { createServer, type Server } from 'node:net';
import { rateLimit as expressRateLimit } from '@sluice/express';
import { rateLimitPlugin } from '@sluice/fastify';
import { rateLimit as koaRateLimit } from '@sluice/koa';
import { createServiceClient, type ServiceClient } from '@sluice/server';
import express from 'express';
import Fastify from 'fastify';
import Koa from 'koa';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/redis-server.js';
import { type ServingSluice, startSluice } from '../helpers/sluice-process.js';

const rulesDir = new URL('./fixtures', import.meta.url).pathname;
const policies = [{ name: 'per-ip', limit: 2, window: '1h' }] as const;
const quiet = { warn() {} };
let sluice: ServingSluice;
const clients: ServiceClient[] = [];
const client = (address: string) => {
  const made = createServiceClient({ address, domain: 'api', logger: quiet });
  clients.push(made);
  return made;
};

beforeAll(async () => {
  sluice = await startSluice(['--rules', rulesDir]);
});
afterAll(async () => {
  for (const c of clients) c.close();
  await sluice?.kill();
});

/** A client of the service in `domain`, and what it warns. */
const warnedClient = (domain: string) => {
  const warnings: string[] = [];
  const store = createServiceClient({ address: sluice.grpcAddress, domain, logger: { warn: (m) => warnings.push(m) } });
  clients.push(store);
  return { warnings, store };
};

const expressApp = (options: Parameters<typeof expressRateLimit>[0]) => {
  const app = express();
  app.use(expressRateLimit(options));
  app.get('/', (_, res) => res.send('ok'));
  return app;
};

describe('the Node client in place of a store', () => {
  it('Express: the service decides, headers and 429 as with a local store', async () => {
    const app = expressApp({ store: client(sluice.grpcAddress), policies: [...policies] });
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await request(app).get('/')).status);
    expect(statuses).toEqual([200, 200, 429]);
    const refused = await request(app).get('/');
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect(refused.headers.ratelimit).toContain('"per-ip";r=0');
  });

  it('Koa and Fastify share the same count in the service', async () => {
    // One key through two frameworks: the service holds one count for both.
    const koa = new Koa();
    koa.use(koaRateLimit({ store: client(sluice.grpcAddress), policies: [...policies], key: () => 'koa-client' }));
    koa.use((ctx) => {
      ctx.body = 'ok';
    });
    const koaServer = koa.callback();
    expect((await request(koaServer).get('/')).status).toBe(200);
    const fastify = Fastify();
    await fastify.register(rateLimitPlugin, {
      store: client(sluice.grpcAddress),
      policies: [...policies],
      key: () => 'koa-client',
    });
    fastify.get('/', async () => 'ok');
    expect((await fastify.inject({ url: '/' })).statusCode).toBe(200);
    expect((await fastify.inject({ url: '/' })).statusCode).toBe(429);
    expect((await request(koaServer).get('/')).status).toBe(429);
    await fastify.close();
  });

  it('a service that is down: onStoreError allow lets requests through, deny refuses them', async () => {
    const nobody = `127.0.0.1:${await freePort()}`;
    const allow = expressApp({ store: client(nobody), policies: [...policies], onStoreError: 'allow', logger: quiet });
    expect((await request(allow).get('/')).status).toBe(200);
    const deny = expressApp({ store: client(nobody), policies: [...policies], onStoreError: 'deny', logger: quiet });
    // As with any store that fails under 'deny': 503 with Retry-After (core's problemStatus).
    expect((await request(deny).get('/')).status).toBe(503);
  });

  it('a service that accepts and never answers: storeTimeoutMs bounds the wait', async () => {
    const silent: Server = createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as { port: number };
    const warnings: string[] = [];
    const app = expressApp({
      store: client(`127.0.0.1:${port}`),
      policies: [...policies],
      storeTimeoutMs: 200,
      logger: { warn: (m) => warnings.push(m) },
    });
    const started = performance.now();
    expect((await request(app).get('/')).status).toBe(200);
    expect(performance.now() - started).toBeLessThan(2000);
    expect(warnings.join()).toContain('WRN_SLUICE_STORE_UNAVAILABLE');
    silent.close();
  });

  it('warns once when the service has no rule for a policy, and lets it pass', async () => {
    const { warnings, store } = warnedClient('api');
    const app = expressApp({ store, policies: [{ name: 'unknown', limit: 1, window: '1h' }] });
    expect((await request(app).get('/')).status).toBe(200);
    expect((await request(app).get('/')).status).toBe(200);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('WRN_SLUICE_NO_RULE');
  });

  // An `unlimited` rule's status has no `current_limit` either: it was warned about as no rule.
  it('warns once of an unlimited rule as a mismatch, not as a missing rule, and lets it pass', async () => {
    const { warnings, store } = warnedClient('edge');
    const app = expressApp({ store, policies: [{ name: 'free', limit: 1, window: '1h' }] });
    expect((await request(app).get('/')).status).toBe(200);
    expect((await request(app).get('/')).status).toBe(200);
    expect(warnings).toEqual([
      expect.stringContaining(
        'WRN_SLUICE_RULE_MISMATCH: policy "free" is 1 per 1h here but unlimited in the decision service\'s rules for domain "edge"',
      ),
    ]);
  });
});
