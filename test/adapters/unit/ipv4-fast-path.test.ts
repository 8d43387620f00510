import { ipKey } from '@sluice/core';
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';

/**
 * `::ffff:` + the trimmed text takes the full parser's IPv4-mapped path, never the dotted-quad shortcut.
 * It is a faithful oracle only for text holding a dot, which the IPv6 parser must then read as
 * an IPv4 tail (`::ffff:1`, without one, is a valid IPv6 address of its own).
 */
const viaFullParser = (text: string): string | undefined => ipKey(`::ffff:${text.trim()}`);

describe('the IPv4 shortcut in ipKey', () => {
  it('keys every dotted-quad-like text exactly as the full parser does', () => {
    const part = fc.oneof(
      fc.integer({ min: 0, max: 300 }).map(String),
      fc.integer({ min: 0, max: 99 }).map((n) => `0${n}`),
      fc.constantFrom('', '-1', '1e2', ' 1', 'a'),
    );
    const text = fc.oneof(
      fc.array(part, { minLength: 3, maxLength: 5 }).map((parts) => parts.join('.')),
      fc.string({ unit: fc.constantFrom('0', '1', '2', '5', '9', '.'), maxLength: 17 }),
    );
    fc.assert(
      fc.property(
        text.filter((t) => t.includes('.')),
        (candidate) => {
          expect(ipKey(candidate)).toBe(viaFullParser(candidate));
        },
      ),
      { numRuns: 5000 },
    );
  });

  it('returns a canonical address unchanged and refuses near misses', () => {
    expect(ipKey('203.0.113.7')).toBe('203.0.113.7');
    expect(ipKey('255.255.255.255')).toBe('255.255.255.255');
    for (const text of ['256.1.1.1', '1.2.3', '1.2.3.4.5', '01.2.3.4', '1..2.3', '1.2.3.4 ']) {
      expect(ipKey(text)).toBe(viaFullParser(text));
    }
  });
});

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
