import { isRulesError, parseRules, type RuleProblem } from '@sluice/rules';
import { describe, expect, it } from 'vitest';

const problemsOf = (text: string): RuleProblem[] => {
  try {
    parseRules(text);
  } catch (error) {
    if (isRulesError(error)) return [...error.problems];
    throw error;
  }
  throw new Error('expected the rules to be refused');
};

describe('YAML anchors, aliases and merge keys', () => {
  it('merge keys (`<<: *anchor`) are resolved as envoyproxy/ratelimit resolves them, not refused', () => {
    const rules = parseRules(
      [
        'domain: edge',
        'descriptors:',
        '  - key: remote_address',
        '    rate_limit: &default { unit: minute, requests_per_unit: 10 }',
        '  - key: path',
        '    value: /login',
        '    rate_limit:',
        '      <<: *default',
        '      requests_per_unit: 2',
        '',
      ].join('\n'),
    );
    expect(rules.rules.map((r) => [r.policies[0]?.limit, r.policies[0]?.window])).toEqual([
      [10, 60_000],
      [2, 60_000],
    ]);
    const policies = parseRules(
      'domain: d\ndescriptors:\n  - key: k\n    policies:\n      - &p { name: a, limit: 1, window: 1s }\n      - { <<: *p, name: b }\n',
    ).rules[0]?.policies;
    expect(policies?.map((p) => [p.name, p.limit, p.window])).toEqual([
      ['a', 1, '1s'],
      ['b', 1, '1s'],
    ]);
  });

  it('an unknown key brought in by a merge key is still reported, where it is written', () => {
    const text = [
      'domain: edge',
      'descriptors:',
      '  - key: a',
      '    rate_limit: &base { unit: minute, request_per_unit: 10 }',
      '  - key: b',
      '    rate_limit: { <<: *base, requests_per_unit: 2 }',
      '  - key: c',
      '    rate_limit: { <<: [ *base, 3 ], requests_per_unit: 2 }',
      '',
    ].join('\n');
    expect(problemsOf(text).map((p) => [p.code, p.line, p.column])).toEqual([
      ['ERR_SLUICE_RULES_MISSING_KEY', 4, 5],
      ['ERR_SLUICE_RULES_UNKNOWN_KEY', 4, 39],
      ['ERR_SLUICE_RULES_INVALID_VALUE', 8, 32],
    ]);
  });

  it('an alias inside metadata is its anchored value, not `{ source }`', () => {
    const rules = parseRules(
      'domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, requests_per_unit: 1 }\n    metadata:\n      a: &x { tier: gold }\n      b: *x\n      c: { <<: *x, extra: 1 }\n',
    );
    expect(rules.rules[0]?.metadata).toEqual({
      a: { tier: 'gold' },
      b: { tier: 'gold' },
      c: { tier: 'gold', extra: 1 },
    });
  });

  it('aliases that multiply a document (a "billion laughs") are refused, not expanded', () => {
    let metadata = '      a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n';
    for (let i = 1; i < 9; i++)
      metadata += `      a${i}: &a${i} [${Array(10)
        .fill(`*a${i - 1}`)
        .join(', ')}]\n`;
    const text = `domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, requests_per_unit: 1 }\n    metadata:\n${metadata}`;
    expect(problemsOf(text).map((p) => [p.code, p.line])).toEqual([['ERR_SLUICE_RULES_INVALID_VALUE', 6]]);
  });
});
