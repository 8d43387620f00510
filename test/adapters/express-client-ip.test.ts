import { type AddressInfo, createServer } from 'node:net';
import { ipKey } from '@sluice/core';
import { rateLimit } from '@sluice/express';
import express from 'express';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { collectingLogger } from './helpers.js';

/** IPv6 loopback where the machine has it, so the socket address is not always IPv4. */
const hosts = await new Promise<string[]>((resolve) => {
  const probe = createServer();
  probe.once('error', () => resolve(['127.0.0.1']));
  probe.listen(0, '::1', () => probe.close(() => resolve(['127.0.0.1', '::1'])));
});

describe('express: the socket address stands in for req.ip when no proxy is trusted', () => {
  it.each([false, 0].flatMap((trust) => hosts.map((host) => [trust, host] as const)))(
    'trust proxy %s, client on %s: the key is the one req.ip gives',
    async (trust, host) => {
      const app = express();
      app.set('trust proxy', trust);
      app.use(rateLimit({ limit: 100, window: '1m', logger: collectingLogger() }));
      app.get('/', (req, res) => {
        res.json({ key: req.rateLimit?.key, fromReqIp: ipKey(req.ip) });
      });
      const server = app.listen(0, host);
      await new Promise((resolve) => server.once('listening', resolve));
      const { port } = server.address() as AddressInfo;
      const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
      try {
        for (const forwarded of [undefined, '203.0.113.9', '2001:db8::1, 198.51.100.2']) {
          const call = request(url).get('/');
          const res = await (forwarded === undefined ? call : call.set('X-Forwarded-For', forwarded)).expect(200);
          expect(res.body.key).toBe(res.body.fromReqIp);
          expect(res.body.key).toBe(ipKey(host));
        }
      } finally {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
      }
    },
  );
});

describe('express: a trust proxy setting that trusts any address warns as `true` does', () => {
  const codesFor = async (trust: unknown): Promise<string[]> => {
    const app = express();
    app.set('trust proxy', trust);
    const logger = collectingLogger();
    app.use(rateLimit({ limit: 100, window: '1m', logger }));
    app.get('/', (_req, res) => {
      res.end();
    });
    await request(app).get('/').set('X-Forwarded-For', '198.51.100.7').expect(200);
    return logger.codes();
  };

  it.each([
    ['a function trusting everyone', () => true],
    // Express reads the answer by truthiness: 1 trusts the hop.
    ['a function answering 1 to everyone', () => 1],
    ['two halves of IPv4', '0.0.0.0/1,128.0.0.0/1'],
    ['two halves of IPv6', '::/1, 8000::/1'],
  ])('%s', async (_label, trust) => {
    expect(await codesFor(trust)).toEqual(['WRN_SLUICE_PERMISSIVE_TRUST_PROXY']);
  });

  it.each([
    ['a hop count', 1],
    ['loopback and private ranges', 'loopback, uniquelocal'],
    ['a function trusting loopback', (address: string) => address === '127.0.0.1' || address === '::ffff:127.0.0.1'],
    [
      'a function that throws on an address it does not expect',
      (address: string) => {
        if (address.startsWith('2001:db8')) throw new Error(`unexpected ${address}`);
        return address.endsWith('127.0.0.1');
      },
    ],
  ])('%s does not', async (_label, trust) => {
    expect(await codesFor(trust)).toEqual([]);
  });

  it('judges a changed setting of the same app anew', async () => {
    const app = express();
    const logger = collectingLogger();
    app.set('trust proxy', 'loopback');
    app.use(rateLimit({ limit: 100, window: '1m', logger }));
    app.get('/', (_req, res) => {
      res.end();
    });
    await request(app).get('/').expect(200);
    expect(logger.codes()).toEqual([]);
    app.set('trust proxy', () => true);
    await request(app).get('/').expect(200);
    expect(logger.codes()).toEqual(['WRN_SLUICE_PERMISSIVE_TRUST_PROXY']);
  });
});
