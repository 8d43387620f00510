import { mkdtempSync, rmSync } from 'node:fs';
import { get } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rateLimitPlugin } from '@sluice/fastify';
import Fastify, { type FastifyInstance } from 'fastify';
import request from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';
import { clockAt, collectingLogger } from './helpers.js';

async function serve(
  trustProxy: number | string | string[] | ((address: string, hop: number) => boolean),
  logger: ReturnType<typeof collectingLogger>,
) {
  // Fastify 5.12's types refuse a number; JavaScript apps and configs written for older
  // versions still pass one.
  const app = Fastify({ trustProxy: trustProxy as string });
  await app.register(rateLimitPlugin, { algorithm: 'fixed-window', limit: 5, window: '1m', logger, clock: clockAt(0) });
  app.get('/', async (req) => ({ key: req.rateLimit?.key }));
  await app.listen({ port: 0, host: '127.0.0.1' });
  return { app, url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}` };
}

describe('fastify: a trustProxy hop count', () => {
  let app: FastifyInstance | undefined;
  afterEach(() => app?.close());

  it('is ignored by Fastify 5.12 and later, and sluice says so once, with a code and the fix', async () => {
    const logger = collectingLogger();
    const served = await serve(1, logger);
    app = served.app;
    for (const client of ['203.0.113.1', '203.0.113.2']) {
      const res = await request(served.url).get('/').set('X-Forwarded-For', client).expect(200);
      expect(res.body).toEqual({ key: '127.0.0.1' });
    }
    expect(logger.codes()).toEqual(['WRN_SLUICE_IGNORED_TRUST_PROXY']);
    expect(logger.messages[0]).toMatch(/addresses or CIDRs/);
  });

  it('says nothing for requests that came through no proxy', async () => {
    const logger = collectingLogger();
    const served = await serve(1, logger);
    app = served.app;
    await request(served.url).get('/').expect(200);
    expect(logger.messages).toEqual([]);
  });

  it('says nothing when the proxies are trusted by address', async () => {
    const logger = collectingLogger();
    const served = await serve('127.0.0.1', logger);
    app = served.app;
    const res = await request(served.url).get('/').set('X-Forwarded-For', '203.0.113.1').expect(200);
    expect(res.body).toEqual({ key: '203.0.113.1' });
    expect(logger.messages).toEqual([]);
  });
});

// Regression: only `trustProxy: true` was reported; a function or subnets that trust every
// address let each client pick its key with X-Forwarded-For without a word.
describe('fastify: a trustProxy that trusts every proxy', () => {
  let app: FastifyInstance | undefined;
  afterEach(() => app?.close());

  it.each([
    ['true', true],
    ['a function that trusts anyone', () => true],
    ['two subnets that cover every IPv4 address', '0.0.0.0/1,128.0.0.0/1'],
    ['a list of subnets that covers every address', ['0.0.0.0/1', '128.0.0.0/1', '::/1']],
  ])('is reported once, with a code: %s', async (_name, trustProxy) => {
    const logger = collectingLogger();
    const served = await serve(trustProxy as string, logger);
    app = served.app;
    for (const client of ['198.51.100.1', '198.51.100.2']) {
      const res = await request(served.url).get('/').set('X-Forwarded-For', client).expect(200);
      expect(res.body).toEqual({ key: client });
    }
    expect(logger.codes()).toEqual(['WRN_SLUICE_PERMISSIVE_TRUST_PROXY']);
  });

  it('is not reported for a function or a list that trusts only the proxies', async () => {
    for (const trustProxy of [(address: string) => address === '127.0.0.1', ['127.0.0.1', '10.0.0.0/8']]) {
      const logger = collectingLogger();
      const served = await serve(trustProxy, logger);
      app = served.app;
      await request(served.url).get('/').set('X-Forwarded-For', '198.51.100.1').expect(200);
      expect(logger.messages).toEqual([]);
      await app.close();
      app = undefined;
    }
  });
});

describe('fastify behind a proxy on a Unix socket', () => {
  let app: FastifyInstance | undefined;
  let dir: string | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  /** The keys of two clients' requests, sent over a Unix socket as a proxy forwards them. */
  async function keysBehindUnixSocket(trustProxy: unknown, logger: ReturnType<typeof collectingLogger>) {
    dir = mkdtempSync(join(tmpdir(), 'sluice-unix-'));
    const path = join(dir, 'app.sock');
    app = Fastify({ trustProxy: trustProxy as string });
    await app.register(rateLimitPlugin, { limit: 5, window: '1m', logger, clock: clockAt(0) });
    app.get('/', async (req) => req.rateLimit?.key);
    await app.listen({ path });
    const keyOf = (client: string) =>
      new Promise<string>((resolve, reject) => {
        const sent = get({ socketPath: path, path: '/', headers: { 'X-Forwarded-For': client } }, (res) => {
          let body = '';
          res.on('data', (chunk) => (body += chunk));
          res.on('end', () => resolve(body));
        });
        sent.on('error', reject);
      });
    return [await keyOf('203.0.113.1'), await keyOf('203.0.113.2')];
  }

  it("keys each client when its one hop is trusted by a function, as the advice now says (an address can't match)", async () => {
    const byAddress = collectingLogger();
    expect(await keysBehindUnixSocket('127.0.0.1', byAddress)).toEqual(['unknown-ip', 'unknown-ip']);
    expect(byAddress.messages.join('\n')).toContain('`(address, hop) => hop === 0`');
    await app?.close();
    app = undefined;
    const byHop = collectingLogger();
    const firstHop = (_address: string, hop: number) => hop === 0;
    expect(await keysBehindUnixSocket(firstHop, byHop)).toEqual(['203.0.113.1', '203.0.113.2']);
    expect(byHop.messages).toEqual([]);
  });
});
