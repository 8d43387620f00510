import { parseRules } from '@sluice/rules';
import { describe, expect, it } from 'vitest';

/** Whether a rule of the one `pattern` on key `k` matches `value`. */
const matcherOf = (pattern: string) => {
  const rules = parseRules(
    `domain: d\ndescriptors:\n  - key: k\n    value: ${JSON.stringify(pattern)}\n    rate_limit: { unit: minute, requests_per_unit: 1 }\n`,
  );
  return (value: string) => rules.matchOne('d', [{ key: 'k', value }]) !== undefined;
};

/**
 * envoyproxy/ratelimit's reading, the oracle: a value ending in `*` is a wildcard matching
 * every value that starts with the text before it (`strings.HasPrefix` of the text with its last
 * `*` trimmed); any other value, `*`s and all, matches itself alone.
 */
const envoyMatches = (pattern: string, value: string) =>
  pattern.endsWith('*') ? value.startsWith(pattern.slice(0, -1)) : value === pattern;

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
  it("match exactly what envoyproxy/ratelimit's matches, over every short pattern and value", () => {
    const values = strings('ab*', 4);
    let checked = 0;
    for (const pattern of strings('ab*', 4)) {
      if (pattern === '') continue;
      const matches = matcherOf(pattern);
      for (const value of values) {
        expect(matches(value), `${pattern} against ${JSON.stringify(value)}`).toBe(envoyMatches(pattern, value));
        checked++;
      }
    }
    // Patterns of 1 to 4 characters (120 of them), against 121 values.
    expect(checked).toBe(120 * 121);
  });

  // Regression: a `*` anywhere was a wildcard, so `*/*` (an `Accept` header) matched every
  // value and `/files/*.tar.gz` every file, where envoyproxy/ratelimit reads both as text.
  it('a `*` before the end is the character itself', () => {
    const accept = matcherOf('*/*');
    expect(accept('*/*')).toBe(true);
    expect(accept('text/html')).toBe(false);
    const archives = matcherOf('/files/*.tar.gz');
    expect(archives('/files/*.tar.gz')).toBe(true);
    expect(archives('/files/a.tar.gz')).toBe(false);
    const prefixed = matcherOf('/v1/*/items/*');
    expect(prefixed('/v1/*/items/7')).toBe(true);
    expect(prefixed('/v1/users/items/7')).toBe(false);
  });

  it('match characters a RegExp treats specially as themselves', () => {
    const special = matcherOf('/v1.0/(x)+*');
    expect(special('/v1.0/(x)+/users')).toBe(true);
    expect(special('/v1x0/(x)+/users')).toBe(false);
    expect(matcherOf('a\n*')('a\n\nb')).toBe(true);
  });

  it('share_threshold needs a value ending in `*`', () => {
    expect(() =>
      parseRules(
        'domain: d\ndescriptors:\n  - key: k\n    value: "a*b"\n    share_threshold: true\n    rate_limit: { unit: minute, requests_per_unit: 1 }\n',
      ),
    ).toThrow(/ERR_SLUICE_RULES_CONFLICT/);
  });
});
