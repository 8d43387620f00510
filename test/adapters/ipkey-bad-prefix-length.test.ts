import { ipKey } from '@sluice/core';
import request from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';
import { harnesses, type RunningApp } from './harness/index.js';
import { clockAt, collectingLogger, decisionOf } from './helpers.js';

/**
 * `ipKey(ip, ipv6Subnet)` inside a `key` function took any prefix length and made a key of it:
 * `0` keyed every IPv6 client as `::/0`, one shared bucket; `NaN` (a `Number()` of an unset
 * environment variable), `200` or `56.5` masked nothing and appended the value (`…::1/NaN`);
 * `true` and `null` became `::/true` and `::/null`. A bad prefix length is now a coded error,
 * for IPv4 clients too, so the mistake shows on the first request and not the first IPv6 one.
 */
describe.each(harnesses)('$name: ipKey given a bad prefix length in a key function', (harness) => {
  let app: RunningApp | undefined;
  afterEach(() => app?.close());

  const start = async (ipv6Subnet: unknown) => {
    const key = (req: unknown) => ipKey(harness.header(req, 'x-client'), ipv6Subnet as number) ?? 'unknown';
    app = await harness.start({
      limits: [
        { algorithm: 'fixed-window', limit: 1, window: '1m', key, clock: clockAt(0), logger: collectingLogger() },
      ],
    });
    return app;
  };

  it.each([0, 129, -1, Number.NaN, 56.5, '56', true, null])(
    'fails the request with ERR_SLUICE_INVALID_IPV6_SUBNET for %s, whatever the client address',
    async (ipv6Subnet) => {
      const running = await start(ipv6Subnet);
      for (const client of ['2001:db8:abcd:12ff::1', '203.0.113.7']) {
        await request(running.url).get('/').set('x-client', client).expect(500);
      }
      expect(running.hits()).toBe(0);
      expect(running.errors()).toHaveLength(2);
      for (const error of running.errors()) {
        expect(error).toMatchObject({
          code: 'ERR_SLUICE_INVALID_IPV6_SUBNET',
          message: expect.stringContaining('`ipKey`'),
        });
      }
    },
  );

  it.each([
    [64, '2001:db8:abcd:12ff::/64'],
    [false, '2001:db8:abcd:12ff::1'],
    [undefined, '2001:db8:abcd:1200::/56'],
  ])('keys by a good one (%s) as before', async (ipv6Subnet, expected) => {
    const running = await start(ipv6Subnet);
    const res = await request(running.url).get('/').set('x-client', '2001:db8:abcd:12ff::1').expect(200);
    expect(decisionOf(res).key).toBe(expected);
  });
});
