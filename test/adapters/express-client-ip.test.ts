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
