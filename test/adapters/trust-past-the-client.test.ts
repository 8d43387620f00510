import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { rateLimit as expressRateLimit } from '@sluice/express';
import { rateLimitPlugin } from '@sluice/fastify';
import { rateLimit as koaRateLimit } from '@sluice/koa';
import express from 'express';
import Fastify from 'fastify';
import Koa from 'koa';
import request from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';
import { collectingLogger } from './helpers.js';

type Logger = ReturnType<typeof collectingLogger>;
const limit = { limit: 100, window: '1m' } as const;

/** Each framework's app, trusting proxies as `trust` says in its own terms, answering the key it counted. */
const frameworks = {
  express: async (trust: unknown, logger: Logger) => {
    const app = express();
    app.set('trust proxy', trust);
    app.use(expressRateLimit({ ...limit, logger }));
    app.get('/', (req, res) => res.json({ key: req.rateLimit?.key }));
    return listening(app.listen(0, '127.0.0.1'));
  },
  koa: async (maxIpsCount: unknown, logger: Logger) => {
    const app = new Koa();
    app.proxy = true;
    app.maxIpsCount = maxIpsCount as number;
    app.use(koaRateLimit({ ...limit, logger }));
    app.use((ctx) => {
      ctx.body = { key: ctx.state.rateLimit?.key };
    });
    return listening(app.listen(0, '127.0.0.1'));
  },
  fastify: async (trustProxy: unknown, logger: Logger) => {
    const app = Fastify({ trustProxy: trustProxy as string });
    await app.register(rateLimitPlugin, { ...limit, logger });
    app.get('/', async (req) => ({ key: req.rateLimit?.key }));
    await app.listen({ port: 0, host: '127.0.0.1' });
    return { url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, close: () => app.close() };
  },
};

async function listening(server: Server) {
  await new Promise((resolve) => server.once('listening', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

// Regression: a setting that trusts more hops than a request comes through (Express's
// `trust proxy` of 2, Koa's `maxIpsCount` of 2, behind one proxy) reads past every entry of
// X-Forwarded-For, so a client chose its own key by sending one; only `true` was reported.
// Here the test client is the one proxy, on loopback, and the address it sends the client behind it.
describe('a trust-proxy setting that reads past the client', () => {
  let close: (() => Promise<unknown>) | undefined;
  afterEach(() => close?.());

  const start = async (framework: keyof typeof frameworks, trust: unknown) => {
    const logger = collectingLogger();
    const app = await frameworks[framework](trust, logger);
    close = app.close;
    const keyFor = async (forwardedFor: string) =>
      (await request(app.url).get('/').set('X-Forwarded-For', forwardedFor).expect(200)).body.key as string;
    return { logger, keyFor };
  };

  // An empty entry is one the frameworks skip: trusted by subnet, it hid the warning; counted
  // as a hop, it hid it under a hop count.
  it.each([
    ['express', 'loopback, 10.0.0.0/8', '10.0.0.1,'],
    ['express', 'loopback, 10.0.0.0/8', '10.0.0.1,,10.0.0.2'],
    ['fastify', ['127.0.0.1', '10.0.0.0/8'], '10.0.0.1,'],
    // Hops are numbered without the empty entries, as the frameworks number them.
    ['express', 3, '10.0.0.1,,10.0.0.2'],
    ['express', 3, '10.0.0.1, ,10.0.0.2,'],
  ] as const)(
    '%s trusting %j, an X-Forwarded-For of %j with an empty entry: warns',
    async (framework, trust, forwardedFor) => {
      const { logger, keyFor } = await start(framework, trust);
      expect(await keyFor(forwardedFor)).toBe('10.0.0.1');
      expect(logger.codes()).toEqual(['WRN_SLUICE_PERMISSIVE_TRUST_PROXY']);
      expect(logger.messages[0]).toContain('(10.0.0.1)');
    },
  );

  it.each([
    ['express', 'a hop count above the proxies', 2],
    ['express', 'a subnet that holds the clients', 'loopback, 192.168.0.0/16'],
    ['koa', 'a maxIpsCount above the proxies', 2],
    ['fastify', 'a subnet that holds the clients', ['127.0.0.1', '192.168.0.0/16']],
    ['fastify', 'a function trusting two hops', (_address: string, hop: number) => hop < 2],
  ] as const)('%s, %s: warns once, and the client could indeed pick its key', async (framework, _label, trust) => {
    const { logger, keyFor } = await start(framework, trust);
    expect(await keyFor('192.168.7.7')).toBe('192.168.7.7');
    expect(logger.codes()).toEqual(['WRN_SLUICE_PERMISSIVE_TRUST_PROXY']);
    expect(logger.messages[0]).toContain('(192.168.7.7)');
    // What the warning is about: an entry the client wrote, before the proxy's, is its key.
    expect(await keyFor('198.51.100.66, 192.168.7.7')).toBe('198.51.100.66');
    expect(logger.codes()).toHaveLength(1);
  });

  // Koa slices the chain by such a count from its start: every entry is read, the client's
  // first, and nothing was said (the count passed for a bounded one).
  it.each([0.5, Number.POSITIVE_INFINITY])(
    'koa, a maxIpsCount of %s: warned as trusting every proxy, as the client picks its key',
    async (maxIpsCount) => {
      const { logger, keyFor } = await start('koa', maxIpsCount);
      expect(await keyFor('198.51.100.66, 192.168.7.7')).toBe('198.51.100.66');
      expect(logger.codes()).toEqual(['WRN_SLUICE_PERMISSIVE_TRUST_PROXY']);
      expect(logger.messages[0]).toContain('trusts every proxy');
    },
  );

  it.each([
    ['express', 'a hop count of the proxies', 1, '203.0.113.7'],
    ['express', 'a hop count of the proxies, two deep', 2, '203.0.113.7, 10.0.0.2'],
    ['express', 'the proxy by address', 'loopback', '203.0.113.7'],
    ['koa', 'a maxIpsCount of the proxies', 1, '203.0.113.7'],
    ['koa', 'a maxIpsCount of 1.5, which Koa reads as 1', 1.5, '203.0.113.7'],
    // From an environment variable: Koa reads '1' as 1, and it was warned as trusting every proxy.
    ['koa', "a maxIpsCount of '1', which Koa reads as 1", '1', '203.0.113.7'],
    ['fastify', 'the proxy by address', ['127.0.0.1'], '203.0.113.7'],
    ['fastify', 'a function trusting one hop', (_address: string, hop: number) => hop < 1, '203.0.113.7'],
    // The client forged an address of the proxies' subnet before its own, which ends the walk.
    ['express', 'the proxies by subnet, the client forging one', 'loopback, 10.0.0.0/8', '10.0.0.1, 203.0.113.7'],
    ['fastify', 'the proxies by subnet, the client forging one', ['127.0.0.1', '10.0.0.0/8'], '10.0.0.1, 203.0.113.7'],
    [
      'express',
      'a function that throws on an address it does not expect',
      (address: string) => {
        if (!address.endsWith('127.0.0.1')) throw new Error(`unexpected ${address}`);
        return true;
      },
      '203.0.113.7',
    ],
  ] as const)('%s, %s: says nothing', async (framework, _label, trust, forwardedFor) => {
    const { logger, keyFor } = await start(framework, trust);
    expect(await keyFor(forwardedFor)).toBe('203.0.113.7');
    expect(logger.messages).toEqual([]);
  });
});
