import { Agent, request as httpRequest } from 'node:http';
import request from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';
import { harnesses, type RunningApp } from '../harness/index.js';
import { clockAt, collectingLogger, decisionOf } from '../helpers.js';

describe.each(harnesses)('$name: client keys and proxy trust', (harness) => {
  let app: RunningApp | undefined;
  afterEach(() => app?.close());
  const oneEach = { algorithm: 'fixed-window', limit: 1, window: '1m' };
  const from = (address: string) =>
    request((app as RunningApp).url)
      .get('/')
      .set('X-Forwarded-For', address);

  describe('behind the trusted loopback proxy', () => {
    it('keys IPv6 clients by their /56: one /56 shares a bucket, another does not', async () => {
      const logger = collectingLogger();
      app = await harness.start({ trust: 'loopback', limits: [{ ...oneEach, logger, clock: clockAt(0) }] });
      expect(decisionOf(await from('2001:db8:abcd:1201::1').expect(200)).key).toBe('2001:db8:abcd:1200::/56');
      await from('2001:DB8:ABCD:12ff:0:0:0:2').expect(429);
      await from('2001:db8:abcd:1300::1').expect(200);
      expect(logger.messages).toEqual([]);
    });

    it('keys IPv4-mapped IPv6 as the IPv4 address it carries, however it is written', async () => {
      app = await harness.start({
        trust: 'loopback',
        limits: [{ ...oneEach, logger: collectingLogger(), clock: clockAt(0) }],
      });
      expect(decisionOf(await from('::ffff:1.2.3.4').expect(200)).key).toBe('1.2.3.4');
      await from('1.2.3.4').expect(429);
      await from('::ffff:102:304').expect(429);
      await from('1.2.3.5').expect(200);
    });

    it('keys IPv4-translated and IPv4-compatible IPv6 by the IPv4 they carry, not one shared /56', async () => {
      app = await harness.start({
        trust: 'loopback',
        limits: [{ ...oneEach, logger: collectingLogger(), clock: clockAt(0) }],
      });
      expect(decisionOf(await from('::ffff:0:1.2.3.4').expect(200)).key).toBe('1.2.3.4');
      expect(decisionOf(await from('::5.6.7.8').expect(200)).key).toBe('5.6.7.8');
      await from('::ffff:0:9.9.9.9').expect(200);
      await from('::9.9.9.10').expect(200);
      await from('1.2.3.4').expect(429);
      await from('::ffff:0:506:708').expect(429);
    });

    it('takes another prefix length from ipv6Subnet', async () => {
      app = await harness.start({
        trust: 'loopback',
        limits: [{ ...oneEach, ipv6Subnet: 64, logger: collectingLogger(), clock: clockAt(0) }],
      });
      expect(decisionOf(await from('2001:db8:abcd:1201::1').expect(200)).key).toBe('2001:db8:abcd:1201::/64');
      await from('2001:db8:abcd:1202::1').expect(200);
      await from('2001:db8:abcd:1201:ffff::9').expect(429);
    });

    it('uses the address the proxy vouches for, not a left-most entry the client wrote', async () => {
      app = await harness.start({
        trust: 'loopback',
        limits: [{ ...oneEach, logger: collectingLogger(), clock: clockAt(0) }],
      });
      expect(decisionOf(await from('203.0.113.1').expect(200)).key).toBe('203.0.113.1');
      await from('203.0.113.2').expect(200);
      await from('6.6.6.6, 203.0.113.1').expect(429);
    });
  });

  it('ignores X-Forwarded-For when no proxy is trusted, and warns once with a code', async () => {
    const logger = collectingLogger();
    app = await harness.start({ limits: [{ ...oneEach, logger, clock: clockAt(0) }] });
    expect(decisionOf(await from('10.0.0.1').expect(200)).key).toBe('127.0.0.1');
    await from('10.0.0.2').expect(429);
    await from('2001:db8::1').expect(429);
    expect(logger.codes()).toEqual(['WRN_SLUICE_UNEXPECTED_X_FORWARDED_FOR']);
  });

  describe('on a connection kept open, as a proxy keeps one', () => {
    /** Sends the requests one after another on one kept-alive connection; resolves their statuses. */
    const overOneConnection = async (headers: Record<string, string>[]): Promise<number[]> => {
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      const sockets = new Set<unknown>();
      const statuses: number[] = [];
      try {
        for (const sent of headers) {
          statuses.push(
            await new Promise<number>((resolve, reject) => {
              const req = httpRequest(`${(app as RunningApp).url}/`, { agent, headers: sent }, (res) => {
                res.resume();
                res.on('end', () => resolve(res.statusCode as number));
              });
              req.on('socket', (socket) => sockets.add(socket));
              req.on('error', reject).end();
            }),
          );
        }
      } finally {
        agent.destroy();
      }
      expect(sockets.size).toBe(1);
      return statuses;
    };

    it("warns when the connection's first request carries X-Forwarded-For", async () => {
      const logger = collectingLogger();
      app = await harness.start({ limits: [{ ...oneEach, limit: 10, logger, clock: clockAt(0) }] });
      const forwarded = { 'x-forwarded-for': '10.0.0.1' };
      expect(await overOneConnection([forwarded, forwarded, forwarded])).toEqual([200, 200, 200]);
      expect(logger.codes()).toEqual(['WRN_SLUICE_UNEXPECTED_X_FORWARDED_FOR']);
    });

    it('reads the header on the first request of a connection only', async () => {
      const logger = collectingLogger();
      app = await harness.start({ limits: [{ ...oneEach, limit: 10, logger, clock: clockAt(0) }] });
      expect(await overOneConnection([{}, { 'x-forwarded-for': '10.0.0.1' }])).toEqual([200, 200]);
      expect(logger.messages).toEqual([]);
    });
  });

  it('warns once, with a code, when the framework trusts every proxy', async () => {
    const logger = collectingLogger();
    app = await harness.start({ trust: 'all', limits: [{ ...oneEach, limit: 10, logger, clock: clockAt(0) }] });
    await from('198.51.100.7').expect(200);
    await from('198.51.100.8').expect(200);
    expect(logger.codes()).toEqual(['WRN_SLUICE_PERMISSIVE_TRUST_PROXY']);
  });

  it('does not check proxy trust for a key function that does not use the IP', async () => {
    const logger = collectingLogger();
    const key = () => 'everyone';
    app = await harness.start({ trust: 'all', limits: [{ ...oneEach, key, logger, clock: clockAt(0) }] });
    await from('198.51.100.7').expect(200);
    expect(logger.messages).toEqual([]);
  });
});
