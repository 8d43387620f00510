import { isIPv6 } from 'node:net';
import { ipKey } from '@sluice/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

describe('ipKey', () => {
  it.each([
    ['1.2.3.4', '1.2.3.4'],
    ['1.2.3.4:5678', '1.2.3.4'],
    ['::ffff:1.2.3.4', '1.2.3.4'],
    ['::FFFF:102:304', '1.2.3.4'],
    ['0:0:0:0:0:ffff:0102:0304', '1.2.3.4'],
    ['[::ffff:1.2.3.4]:443', '1.2.3.4'],
    ['2001:db8:abcd:12ff:1111:2222:3333:4444', '2001:db8:abcd:1200::/56'],
    ['[2001:db8:abcd:12ff::1]:8080', '2001:db8:abcd:1200::/56'],
    ['fe80::1%eth0', 'fe80::/56'],
    ['::1', '::/56'],
    ['::', '::/56'],
    ['::ffff:0:1.2.3.4', '1.2.3.4'],
    ['::ffff:0:102:304', '1.2.3.4'],
    ['::1.2.3.4', '1.2.3.4'],
    ['::0.0.0.2', '0.0.0.2'],
    ['::1:0:1.2.3.4', '::/56'],
    ['2001:db8::1.2.3.4', '2001:db8::/56'],
    // NAT64's well-known prefix: each IPv4 client its own key (they shared 64:ff9b::/56).
    ['64:ff9b::1.2.3.4', '1.2.3.4'],
    ['64:FF9B::506:708', '5.6.7.8'],
    ['64:ff9b::1:1.2.3.4', '64:ff9b::/56'],
    ['64:ff9b:1::1.2.3.4', '64:ff9b:1::/56'],
  ])('%s → %s', (ip, key) => {
    expect(ipKey(ip)).toBe(key);
  });

  it('masks to another prefix length, or not at all, always in canonical form', () => {
    expect(ipKey('2001:0db8:0000:0000:0001:0000:0000:0001', 64)).toBe('2001:db8::/64');
    expect(ipKey('2001:0DB8:0000:0000:0001:0000:0000:0001', false)).toBe('2001:db8::1:0:0:1');
    expect(ipKey('2001:db8:0:0:1:0:0:1', 128)).toBe('2001:db8::1:0:0:1');
    expect(ipKey('2001:db8:1:2:3:4:5:6', 48)).toBe('2001:db8:1::/48');
    expect(ipKey('2001:db8:1:2:3:4:5:6', 60)).toBe('2001:db8:1::/60');
    expect(ipKey('2001:db8:1:1f:3:4:5:6', 60)).toBe('2001:db8:1:10::/60');
    expect(ipKey('1.2.3.4', 64)).toBe('1.2.3.4');
  });

  it.each([
    'localhost',
    '1.2.3',
    '1.2.3.256',
    '01.2.3.4',
    '1.2.3.4:99999',
    '1::2::3',
    '1:2:3:4:5:6:7:8:9',
    '1:2:3:4:5:6:7',
    '12345::',
    '::ffff:1.2.3.4.5',
    '[::1',
    '',
  ])('rejects %j', (ip) => {
    expect(ipKey(ip)).toBeUndefined();
  });

  it('returns undefined for no address', () => {
    expect(ipKey(undefined)).toBeUndefined();
  });

  it('gives one key per address whatever its spelling, valid for Node, inside the /56', () => {
    fc.assert(
      fc.property(fc.ipV6(), (ip) => {
        const whole = ipKey(ip, false) as string;
        expect(whole).toBeDefined();
        if (whole.includes('.')) return;
        expect(isIPv6(whole)).toBe(true);
        expect(ipKey(whole.toUpperCase(), false)).toBe(whole);
        expect(ipKey(ip)).toBe(ipKey(whole));
        expect(ipKey(`${(ipKey(ip) as string).split('/')[0]}`, false)).toBe((ipKey(ip) as string).split('/')[0]);
      }),
    );
  });

  it('keys every IPv4 address as itself, plain, mapped, translated or compatible', () => {
    fc.assert(
      fc.property(fc.ipV4(), (ip) => {
        expect(ipKey(ip)).toBe(ip);
        expect(ipKey(`::ffff:${ip}`)).toBe(ip);
        expect(ipKey(`::ffff:0:${ip}`)).toBe(ip);
        if (ip !== '0.0.0.0' && ip !== '0.0.0.1') expect(ipKey(`::${ip}`)).toBe(ip);
      }),
    );
  });
});
