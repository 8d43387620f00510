import { ipKey } from '@sluice/core';
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';

describe('ipKey remembering the last address it keyed', () => {
  const addresses = ['203.0.113.7', '2001:db8:abcd:12ff::1', '::ffff:203.0.113.7', 'not-an-ip', '', '10.0.0.1'];
  const subnets = [56, 64, 128, false] as const;

  it('gives every address, under every subnet, in any order, the key it gets on its own', () => {
    const alone = new Map<string, string | undefined>();
    // Each (address, subnet) keyed right after an unrelated one, so no memory carries over.
    for (const address of addresses) {
      for (const subnet of subnets) {
        ipKey('192.0.2.1');
        alone.set(`${address}|${subnet}`, ipKey(address, subnet));
      }
    }
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom(...addresses), fc.constantFrom(...subnets)), { maxLength: 30 }),
        (calls) => {
          for (const [address, subnet] of calls) {
            expect(ipKey(address, subnet)).toBe(alone.get(`${address}|${subnet}`));
          }
        },
      ),
    );
  });

  it('keys one IPv6 address by the subnet asked, not the one asked last time', () => {
    expect(ipKey('2001:db8:abcd:12ff::1', 56)).toBe('2001:db8:abcd:1200::/56');
    expect(ipKey('2001:db8:abcd:12ff::1', 64)).toBe('2001:db8:abcd:12ff::/64');
    expect(ipKey('2001:db8:abcd:12ff::1', false)).toBe('2001:db8:abcd:12ff::1');
  });

  it('never answers an empty address or a non-address with a key, not even on its first call', async () => {
    vi.resetModules();
    const fresh = await import('@sluice/core');
    expect(fresh.ipKey('')).toBeUndefined();
    expect(ipKey('')).toBeUndefined();
    expect(ipKey('203.0.113.7')).toBe('203.0.113.7');
    expect(ipKey('not-an-ip')).toBeUndefined();
    expect(ipKey('not-an-ip')).toBeUndefined();
  });
});
