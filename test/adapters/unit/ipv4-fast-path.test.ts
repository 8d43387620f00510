import { ipKey } from '@sluice/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

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
