import { parseRules } from '@sluice/rules';
import { describe, expect, it } from 'vitest';

/** Whether a rule of the one wildcard `pattern` on key `k` matches `value`. */
const matcherOf = (pattern: string) => {
  const rules = parseRules(
    `domain: d\ndescriptors:\n  - key: k\n    value: ${JSON.stringify(pattern)}\n    rate_limit: { unit: minute, requests_per_unit: 1 }\n`,
  );
  return (value: string) => rules.matchOne('d', [{ key: 'k', value }]) !== undefined;
};

/** What envoyproxy/ratelimit's wildcard means, as a RegExp: the oracle for short values. */
const oracleOf = (pattern: string) => {
  const source = pattern
    .split('*')
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  const regexp = new RegExp(`^${source}$`, 's');
  return (value: string) => regexp.test(value);
};

/** Every string over `alphabet` of up to `length` characters. */
function* strings(alphabet: string, length: number): Generator<string> {
  yield '';
  if (length === 0) return;
  for (const shorter of strings(alphabet, length - 1)) {
    if (shorter.length === length - 1) for (const c of alphabet) yield shorter + c;
  }
}

describe('wildcard values', () => {
  it('match exactly what the RegExp reading matches, over every short pattern and value', () => {
    const values = [...strings('ab', 6)];
    let checked = 0;
    for (const pattern of strings('ab*', 5)) {
      if (!pattern.includes('*')) continue;
      const [matches, oracle] = [matcherOf(pattern), oracleOf(pattern)];
      for (const value of values) {
        expect(matches(value), `${pattern} against ${JSON.stringify(value)}`).toBe(oracle(value));
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(10_000);
  });

  it('keep a prefix and a suffix from overlapping, and match characters a RegExp treats specially', () => {
    const match = matcherOf('ab*ba');
    expect(match('aba')).toBe(false);
    expect(match('abba')).toBe(true);
    const special = matcherOf('/v1.0/*/(x)+');
    expect(special('/v1.0/users/(x)+')).toBe(true);
    expect(special('/v1x0/users/(x)+')).toBe(false);
    expect(matcherOf('a*\nb')('a\n\nb')).toBe(true);
  });

  it('decide a hostile value of many candidate places without backtracking through them', () => {
    // As RegExps, `*a*a*a*b` over 1,024 `a`s took 54 s and `*/*/*/edit` over 1,024 `/`s 316 ms.
    const many = 'a'.repeat(1024);
    expect(matcherOf('*a*a*a*b')(many)).toBe(false);
    expect(matcherOf('*a*a*a*b')(`${many}b`)).toBe(true);
    const slashes = '/'.repeat(16_384);
    expect(matcherOf('*/*/*/edit')(slashes)).toBe(false);
    expect(matcherOf('*/*/*/edit')(`${slashes}edit`)).toBe(true);
  });
});
