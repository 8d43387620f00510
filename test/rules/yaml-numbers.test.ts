import { parseRules } from '@sluice/rules';
import { describe, expect, it } from 'vitest';
import { problemsOf } from '../helpers/rules.js';

// envoyproxy/ratelimit reads its files as YAML 1.1 (Go's gopkg.in/yaml.v2); sluice reads YAML 1.2.
const withCount = (count: string) =>
  `domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, requests_per_unit: ${count} }\n`;

describe('numbers YAML 1.1 and YAML 1.2 read apart', () => {
  it('a count with a leading zero is refused at it (`010` read as 10, where envoyproxy/ratelimit reads 8)', () => {
    for (const count of ['010', '00', '+010', '08']) {
      const problems = problemsOf(withCount(count));
      expect(problems.map((p) => [p.code, p.line, p.column])).toEqual([['ERR_SLUICE_RULES_INVALID_VALUE', 4, 52]]);
      expect(problems[0]?.message).toContain(`written \`${count}\``);
    }
  });

  it('forms both read as the same number are accepted', () => {
    const countOf = (count: string) => parseRules(withCount(count)).rules[0]?.rateLimit?.requestsPerUnit;
    expect(['0', '10', '+5', '0o10', '0x1F', '1e3', '010.0'].map(countOf)).toEqual([0, 10, 5, 8, 31, 1000, 10]);
  });

  // A `%YAML 1.1` directive switched the reader to YAML 1.1's numbers: `1:30` loaded as 90.
  it.each([
    ['', 4],
    ['%YAML 1.1\n---\n', 6],
  ])('forms only YAML 1.1 reads as numbers are refused as text, quoting what was written (%j)', (directive, line) => {
    for (const count of ['1_000', '0b101', '+0x1F', '1:30']) {
      const problems = problemsOf(`${directive}${withCount(count)}`);
      expect(problems[0]?.line).toBe(line);
      expect(problems.map((p) => [p.code, p.message])).toEqual([
        [
          'ERR_SLUICE_RULES_INVALID_VALUE',
          `\`requests_per_unit\` must be a whole number from 0 to 4294967295; received the text "${count}".`,
        ],
      ]);
    }
  });

  it("a leading zero in sluice's own policies and throttle is refused the same way, at each number", () => {
    const text = [
      'domain: d',
      'descriptors:',
      '  - key: k',
      '    policies:',
      '      - { limit: 010, window: 1s }',
      '      - { name: queued, limit: 1, window: 1s, algorithm: gcra, queue: { maxDelayMs: 0100 } }',
      '    throttle: { mode: soft, overagePercent: 020 }',
      '',
    ].join('\n');
    expect(problemsOf(text).map((p) => [p.code, p.line, p.column])).toEqual([
      ['ERR_SLUICE_RULES_INVALID_VALUE', 5, 18],
      ['ERR_SLUICE_RULES_INVALID_VALUE', 6, 85],
      ['ERR_SLUICE_RULES_INVALID_VALUE', 7, 45],
    ]);
  });
});
