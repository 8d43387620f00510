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

/** Every string over `alphabet` of up to `length` characters, shortest first. */
function strings(alphabet: string, length: number): string[] {
  const all = [''];
  let level = [''];
  for (let n = 1; n <= length; n++) {
    level = level.flatMap((shorter) => [...alphabet].map((c) => shorter + c));
    all.push(...level);
  }
  return all;
}

describe('wildcard values', () => {
  it('match exactly what the RegExp reading matches, over every short pattern and value', () => {
    const values = strings('ab', 6);
    let checked = 0;
    for (const pattern of strings('ab*', 5)) {
      if (!pattern.includes('*')) continue;
      const [matches, oracle] = [matcherOf(pattern), oracleOf(pattern)];
      for (const value of values) {
        expect(matches(value), `${pattern} against ${JSON.stringify(value)}`).toBe(oracle(value));
        checked++;
      }
    }
    // Patterns of 1 to 5 characters with a `*` (301 of them), against 127 values.
    expect(checked).toBe(301 * 127);
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
    // With a `*` last, the suffix check settles nothing: the scan of the middle parts does.
    expect(matcherOf('*a*a*a*b*')(many)).toBe(false);
    expect(matcherOf('*a*a*a*b*')(`${many}b${many}`)).toBe(true);
    const slashes = '/'.repeat(16_384);
    expect(matcherOf('*/*/*/edit')(slashes)).toBe(false);
    expect(matcherOf('*/*/*/edit')(`${slashes}edit`)).toBe(true);
  });
});
