import type { AddressInfo } from 'node:net';
import { rateLimit as expressRateLimit } from '@sluice/express';
import { rateLimitPlugin } from '@sluice/fastify';
import { rateLimit as koaRateLimit } from '@sluice/koa';
import express from 'express';
import Fastify from 'fastify';
import Koa from 'koa';
import request from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';
import { harnesses, type RunningApp } from './harness/index.js';
import { clockAt, collectingLogger, decisionOf } from './helpers.js';

const oneEach = { algorithm: 'fixed-window', limit: 1, window: '1m' } as const;

// Regression: a proxy the frameworks cannot read through (one that sends only `Forwarded` or
// `X-Real-IP`) left every client on the proxy's key without a word.
describe.each(harnesses)('$name: a proxy header the framework does not read', (harness) => {
  let app: RunningApp | undefined;
  afterEach(() => app?.close());

  it.each([
    ['Forwarded', 'none', 'for=203.0.113.7;proto=https'],
    ['X-Real-IP', 'none', '203.0.113.7'],
    ['Forwarded', 'loopback', 'for=203.0.113.7'],
    ['X-Real-IP', 'loopback', '203.0.113.7'],
  ] as const)('%s alone (trusting %s) warns once, with a code', async (name, trust, value) => {
    const logger = collectingLogger();
    app = await harness.start({
      trust,
      limits: [{ ...oneEach, logger, clock: clockAt(0) }],
    });
    expect(decisionOf(await request(app.url).get('/').set(name, value).expect(200)).key).toBe('127.0.0.1');
    await request(app.url).get('/').set(name, '203.0.113.8').expect(429);
    expect(logger.codes()).toEqual(['WRN_SLUICE_UNREAD_PROXY_HEADER']);
    expect(logger.messages[0]).toContain(name);
  });

  // Regression: an empty X-Forwarded-For (a proxy that forwards a header it was sent empty)
  // read as a chain whose last hop was not the peer, and warned of an untrusted proxy.
  it.each(['none', 'loopback'] as const)(
    'says nothing of an X-Forwarded-For that names no address (trusting %s)',
    async (trust) => {
      const logger = collectingLogger();
      app = await harness.start({ trust, limits: [{ ...oneEach, logger, clock: clockAt(0) }] });
      for (const value of ['', ' , '])
        await request(app.url).get('/').set('Connection', 'close').set('X-Forwarded-For', value);
      expect(logger.messages).toEqual([]);
    },
  );

  // Its last entry empty, a chain says nothing of the nearest proxy: Koa, trusting one hop, keys
  // such a request by its socket, and the warning blamed a trust setting that trusts every peer.
  it('says nothing of a trusted X-Forwarded-For whose last entry is empty', async () => {
    const logger = collectingLogger();
    app = await harness.start({ trust: 'loopback', limits: [{ ...oneEach, logger, clock: clockAt(0) }] });
    await request(app.url).get('/').set('X-Forwarded-For', '203.0.113.7,');
    expect(logger.codes()).not.toContain('WRN_SLUICE_UNTRUSTED_PROXY');
  });

  it('says nothing when X-Forwarded-For comes with it from a trusted proxy', async () => {
    const logger = collectingLogger();
    app = await harness.start({ trust: 'loopback', limits: [{ ...oneEach, logger, clock: clockAt(0) }] });
    await request(app.url).get('/').set('X-Real-IP', '203.0.113.7').set('X-Forwarded-For', '203.0.113.7').expect(200);
    expect(logger.messages).toEqual([]);
  });
});

// Regression: a trusted-proxy list that misses the real proxy left every client behind it on the
// proxy's key without a word.
describe('a trust-proxy list that misses the proxy', () => {
  let close: (() => Promise<unknown>) | undefined;
  afterEach(() => close?.());

  const serveExpress = async (logger: ReturnType<typeof collectingLogger>) => {
    const app = express();
    app.set('trust proxy', '10.0.0.1');
    app.use(expressRateLimit({ ...oneEach, logger, clock: clockAt(0) }));
    app.get('/', (req, res) => res.json({ key: req.rateLimit?.key }));
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    close = () => new Promise((resolve) => server.close(resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  };

  const serveFastify = async (logger: ReturnType<typeof collectingLogger>) => {
    const app = Fastify({ trustProxy: '10.0.0.1' });
    await app.register(rateLimitPlugin, { ...oneEach, logger, clock: clockAt(0) });
    app.get('/', async (req) => ({ key: req.rateLimit?.key }));
    await app.listen({ port: 0, host: '127.0.0.1' });
    close = () => app.close();
    return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  };

  it.each([
    ['express', serveExpress],
    ['fastify', serveFastify],
  ])('%s: warns once, naming the proxy the setting does not trust', async (_name, serve) => {
    const logger = collectingLogger();
    const url = await serve(logger);
    const res = await request(url).get('/').set('X-Forwarded-For', '203.0.113.7').expect(200);
    expect(res.body.key).toBe('127.0.0.1');
    await request(url).get('/').set('X-Forwarded-For', '203.0.113.8').expect(429);
    expect(logger.codes()).toEqual(['WRN_SLUICE_UNTRUSTED_PROXY']);
    expect(logger.messages[0]).toContain('127.0.0.1');
  });
});

// Regression: Koa reads the chain from `app.proxyIpHeader`; the warnings read X-Forwarded-For
// whatever it named, telling an app that reads X-Real-IP to make its proxy send X-Forwarded-For.
describe('koa: the header app.proxyIpHeader names', () => {
  let close: (() => Promise<unknown>) | undefined;
  afterEach(() => close?.());

  const serveKoa = async (logger: ReturnType<typeof collectingLogger>, proxy: boolean, maxIpsCount = 1) => {
    const app = new Koa();
    app.proxy = proxy;
    app.maxIpsCount = maxIpsCount;
    app.proxyIpHeader = 'X-Real-IP';
    app.use(koaRateLimit({ ...oneEach, logger, clock: clockAt(0) }));
    app.use((ctx) => {
      ctx.body = { key: ctx.state.rateLimit?.key };
    });
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    close = () => new Promise((resolve) => server.close(resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  };

  it('is the chain read: from a trusted proxy, nothing to warn of', async () => {
    const logger = collectingLogger();
    const url = await serveKoa(logger, true);
    const res = await request(url).get('/').set('X-Real-IP', '203.0.113.7').expect(200);
    expect(res.body.key).toBe('203.0.113.7');
    expect(logger.messages).toEqual([]);
  });

  // A proxy sets X-Real-IP whole: a hop count above its one entry lets no client choose its key.
  it('is not counted in hops: two proxies trusted, one X-Real-IP entry, nothing to warn of', async () => {
    const logger = collectingLogger();
    const url = await serveKoa(logger, true, 2);
    await request(url).get('/').set('X-Real-IP', '203.0.113.7').expect(200);
    expect(logger.messages).toEqual([]);
  });

  it('trusting no proxy, the warning names that header', async () => {
    const logger = collectingLogger();
    const url = await serveKoa(logger, false);
    await request(url).get('/').set('X-Real-IP', '203.0.113.7').expect(200);
    expect(logger.codes()).toEqual(['WRN_SLUICE_UNEXPECTED_X_FORWARDED_FOR']);
    expect(logger.messages[0]).toContain('carries X-Real-IP but the app trusts no proxy');
  });

  it('trusting every proxy, the warning names that header', async () => {
    const logger = collectingLogger();
    const url = await serveKoa(logger, true, 0);
    await request(url).get('/').set('X-Real-IP', '203.0.113.7').expect(200);
    expect(logger.codes()).toEqual(['WRN_SLUICE_PERMISSIVE_TRUST_PROXY']);
    expect(logger.messages[0]).toContain('by sending X-Real-IP');
  });

  it('a proxy that sends X-Forwarded-For instead is the header left unread', async () => {
    const logger = collectingLogger();
    const url = await serveKoa(logger, true);
    await request(url).get('/').set('X-Forwarded-For', '203.0.113.7').expect(200);
    expect(logger.codes()).toEqual(['WRN_SLUICE_UNREAD_PROXY_HEADER']);
    expect(logger.messages[0]).toContain('carries X-Forwarded-For but no X-Real-IP');
  });
});
