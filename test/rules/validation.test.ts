import { isSluiceError, type SluiceError, toPolicy } from '@sluice/core';
import { coreVerdict, isRulesError, parseRules, type RuleProblem, UNIT_MS } from '@sluice/rules';
import { describe, expect, it } from 'vitest';

/** The problems `parseRules` reports for a text; fails when it parses. */
function problemsOf(text: string): RuleProblem[] {
  try {
    parseRules(text, { source: 'rules.yaml' });
  } catch (error) {
    expect(isRulesError(error)).toBe(true);
    return [...(error as { problems: RuleProblem[] }).problems];
  }
  throw new Error('expected the rules to be refused');
}

const brief = (p: RuleProblem) => [p.code, p.line, p.column];

describe('rules validation', () => {
  it("the seed's misspelt key is reported with the real one, file, line and column", () => {
    const problems = problemsOf(
      [
        'domain: messaging',
        'descriptors:',
        '  - key: message_type',
        '    value: marketing',
        '    rate_limit:',
        '      unit: day',
        '      request_per_unit: 5',
        '',
      ].join('\n'),
    );
    expect(problems.map(brief)).toEqual([
      ['ERR_SLUICE_RULES_MISSING_KEY', 5, 5],
      ['ERR_SLUICE_RULES_UNKNOWN_KEY', 7, 7],
    ]);
    expect(problems[1]?.message).toContain('did you mean `requests_per_unit`?');
    expect(problems[1]?.source).toBe('rules.yaml');
  });

  it('reports every problem at once, in file order, and the error carries the first code', () => {
    const text = [
      'domain: d',
      'descriptors:',
      '  - key: a',
      '    rate_limit: { unit: fortnight, requests_per_unit: 5 }',
      '  - key: a',
      '    rate_limit: { unit: day, requests_per_unit: -1 }',
      '  - value: x',
      '  - key: b',
      '    rate_limit: { unlimited: true, unit: day }',
      '    shadow_mode: maybe',
      '  - key: c',
      '    rate_limit: { unit: day, requests_per_unit: 1 }',
      '    policies: [{ limit: 1, window: 1s }]',
      '',
    ].join('\n');
    let caught: unknown;
    try {
      parseRules(text);
    } catch (error) {
      caught = error;
    }
    expect(isSluiceError(caught) && caught.code).toBe('ERR_SLUICE_RULES_INVALID_VALUE');
    expect((caught as Error).message).toContain('<rules>:4:25');
    expect(problemsOf(text).map(brief)).toEqual([
      ['ERR_SLUICE_RULES_INVALID_VALUE', 4, 25],
      ['ERR_SLUICE_RULES_DUPLICATE', 5, 5],
      ['ERR_SLUICE_RULES_INVALID_VALUE', 6, 49],
      ['ERR_SLUICE_RULES_MISSING_KEY', 7, 5],
      ['ERR_SLUICE_RULES_CONFLICT', 9, 36],
      ['ERR_SLUICE_RULES_INVALID_VALUE', 10, 18],
      ['ERR_SLUICE_RULES_CONFLICT', 13, 5],
    ]);
  });

  it("policies are checked by core's own validation, at the option that is wrong", () => {
    const problems = problemsOf(
      [
        'domain: d',
        'descriptors:',
        '  - key: user',
        '    policies:',
        '      - { limit: 10, window: 1s, algorithm: gcra, burst: 0 }',
        '      - limit: 5',
        '        window: 1.5ms',
        '      - { limit: 5, window: 1m, algoritm: gcra }',
        '      - { limit: 5, window: 1m, algorithm: fixed-window, queue: { maxDelayMs: 1s } }',
        '',
      ].join('\n'),
    );
    expect(problems.map(brief)).toEqual([
      ['ERR_SLUICE_RULES_INVALID_POLICY', 5, 58],
      ['ERR_SLUICE_RULES_INVALID_POLICY', 7, 17],
      ['ERR_SLUICE_RULES_UNKNOWN_KEY', 8, 33],
      ['ERR_SLUICE_RULES_INVALID_POLICY', 9, 65],
    ]);
    expect(problems[0]?.message).toContain('ERR_SLUICE_INVALID_BURST');
    expect(problems[1]?.message).toContain('ERR_SLUICE_INVALID_DURATION');
    expect(problems[3]?.message).toContain('ERR_SLUICE_INVALID_QUEUE');
  });

  it('two policies with one name (default names come from the window) are a duplicate', () => {
    const problems = problemsOf(
      'domain: d\ndescriptors:\n  - key: u\n    policies:\n      - { limit: 1, window: 1m }\n      - { limit: 2, window: 60000 }\n',
    );
    expect(problems.map((p) => p.code)).toEqual(['ERR_SLUICE_RULES_INVALID_POLICY']);
    expect(problems[0]?.message).toContain('ERR_SLUICE_DUPLICATE_POLICY');
  });

  // Regression: `!!str yes` was read as true, though tagged as text.
  it('a flag is a boolean or a bare YAML 1.1 word, never a word tagged as text', () => {
    const flagged = (value: string) =>
      parseRules(
        `domain: d\ndescriptors:\n  - key: u\n    shadow_mode: ${value}\n    rate_limit: { unit: day, requests_per_unit: 1 }\n`,
      ).rules[0]?.shadowMode;
    expect([
      flagged('yes'),
      flagged('off'),
      flagged('!!bool true'),
      flagged('!!bool on'),
      flagged('!!bool "yes"'),
    ]).toEqual([true, false, true, true, true]);
    for (const [text, column] of [
      ['!!str yes', 24],
      ['"yes"', 18],
    ] as const) {
      expect(problemsOf(`domain: d\ndescriptors:\n  - key: u\n    shadow_mode: ${text}\n`).map(brief)).toEqual([
        ['ERR_SLUICE_RULES_INVALID_VALUE', 4, column],
      ]);
    }
  });

  it('throttle is checked by core; it needs a limit and excludes shadow_mode', () => {
    expect(problemsOf('domain: d\ndescriptors:\n  - key: u\n    throttle: { mode: soft }\n').map(brief)).toEqual([
      ['ERR_SLUICE_RULES_CONFLICT', 4, 5],
      ['ERR_SLUICE_RULES_INVALID_POLICY', 4, 15],
    ]);
    const text =
      'domain: d\ndescriptors:\n  - key: u\n    shadow_mode: true\n    throttle: { mode: soft, overagePercent: 20 }\n    policies: [{ limit: 1, window: 1s }]\n';
    expect(problemsOf(text).map(brief)).toEqual([['ERR_SLUICE_RULES_CONFLICT', 5, 5]]);
  });

  it('a unit named as a property every object has is an unknown unit, not a window', () => {
    const problems = problemsOf(
      'domain: d\ndescriptors:\n  - key: u\n    rate_limit: { unit: constructor, requests_per_unit: 1 }\n',
    );
    expect(problems.map(brief)).toEqual([['ERR_SLUICE_RULES_INVALID_VALUE', 4, 25]]);
    expect(problems[0]?.message).toContain('`rate_limit.unit` must be one of second, minute');
  });

  it('a limit beyond what core counts exactly is refused at requests_per_unit', () => {
    const problems = problemsOf(
      'domain: d\ndescriptors:\n  - key: u\n    rate_limit:\n      unit: year\n      requests_per_unit: 1000000\n',
    );
    expect(problems.map(brief)).toEqual([['ERR_SLUICE_RULES_INVALID_POLICY', 6, 26]]);
    // Core's own verdict, without its mark, and the code it came from.
    let refused: SluiceError | undefined;
    try {
      toPolicy({ name: 'per-year', limit: 1_000_000, window: UNIT_MS.year, algorithm: 'fixed-window' }, 'rate_limit');
    } catch (error) {
      refused = error as SluiceError;
    }
    expect(coreVerdict(refused as SluiceError)).toMatch(
      /^Option `rate_limit\.window` .* \(from ERR_SLUICE_INVALID_WINDOW\)$/,
    );
    expect(problems[0]?.message).toBe(
      `\`requests_per_unit\` 1000000 per year is beyond what a limiter can count: ${coreVerdict(refused as SluiceError)}`,
    );
  });

  // Regression: a misspelt option was dropped unseen, a number became a source, and `null`
  // threw an uncoded TypeError.
  it.each([
    [{ sourc: 'rules.yaml' }, 'ERR_SLUICE_UNKNOWN_OPTION'],
    [{ source: 5 }, 'ERR_SLUICE_INVALID_OPTION'],
    [{ source: '' }, 'ERR_SLUICE_INVALID_OPTION'],
    [null, 'ERR_SLUICE_INVALID_OPTION'],
  ])('parseRules refuses the options %o with %s', (options, code) => {
    expect(() => parseRules('domain: d\n', options as never)).toThrow(expect.objectContaining({ code }));
  });

  it('replaces must name another rule', () => {
    const problems = problemsOf(
      'domain: d\ndescriptors:\n  - key: u\n    rate_limit:\n      name: me\n      unit: day\n      requests_per_unit: 1\n      replaces: [{ name: me }, { name: "" }, { nam: x }]\n',
    );
    expect(problems.map(brief)).toEqual([
      ['ERR_SLUICE_RULES_INVALID_VALUE', 8, 26],
      ['ERR_SLUICE_RULES_INVALID_VALUE', 8, 40],
      ['ERR_SLUICE_RULES_MISSING_KEY', 8, 46],
      ['ERR_SLUICE_RULES_UNKNOWN_KEY', 8, 48],
    ]);
  });

  it('syntax errors, duplicate YAML keys and duplicate domains', () => {
    expect(problemsOf('domain: a\ndescriptors: [\n').map((p) => p.code)).toContain('ERR_SLUICE_RULES_SYNTAX');
    expect(problemsOf('domain: a\ndomain: b\n').map(brief)).toEqual([['ERR_SLUICE_RULES_DUPLICATE', 2, 1]]);
    expect(problemsOf('domain: a\n---\ndomain: a\n').map(brief)).toEqual([['ERR_SLUICE_RULES_DUPLICATE', 3, 9]]);
    expect(problemsOf('descriptors: []\n').map(brief)).toEqual([['ERR_SLUICE_RULES_MISSING_KEY', 1, 1]]);
    expect(problemsOf('- domain: a\n').map(brief)).toEqual([['ERR_SLUICE_RULES_INVALID_VALUE', 1, 1]]);
    expect(problemsOf('domain: a\nunit: day\n').map(brief)).toEqual([['ERR_SLUICE_RULES_UNKNOWN_KEY', 2, 1]]);
  });

  it('a key repeated in a nested mapping, in a mapping of keys of other types, and a merge key twice', () => {
    const withMetadata = (metadata: string) =>
      `domain: d\ndescriptors:\n  - key: k\n    metadata: ${metadata}\n    rate_limit: { unit: second, requests_per_unit: 1 }\n`;
    expect(problemsOf(withMetadata('{ a: { b: 1, c: 2, b: 3 } }')).map(brief)).toEqual([
      ['ERR_SLUICE_RULES_DUPLICATE', 4, 34],
    ]);
    // Keys of the same text but not the same value, as YAML compares them, are apart; NaN equals nothing.
    expect(parseRules(withMetadata('{ 1: a, "1": b }')).rules[0]?.metadata).toEqual({ 1: 'b' });
    expect(() => parseRules(withMetadata('{ .nan: 1, .NaN: 2 }'))).not.toThrow();
    // A key twice is reported beside a syntax error further on.
    expect(problemsOf('domain: d\ndomain: e\ndescriptors: [\n').map(brief)).toEqual([
      ['ERR_SLUICE_RULES_DUPLICATE', 2, 1],
      ['ERR_SLUICE_RULES_SYNTAX', 4, 1],
    ]);
    expect(() => parseRules(withMetadata('{ <<: { x: 1 }, <<: { y: 2 } }'))).not.toThrow();
  });

  // The yaml package's own check compared each key with every one before it: 50,000 keys of
  // metadata (540 KB) took 26 s to read, in every server watching the rules.
  it('a mapping of 50,000 keys is read, and one repeated at its end is refused there', () => {
    const keys = Array.from({ length: 50_000 }, (_, i) => `k${i}: 1`).join(', ');
    const text = (extra: string) =>
      `domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, requests_per_unit: 1 }\n    metadata: { ${keys}${extra} }\n`;
    expect(Object.keys(parseRules(text('')).rules[0]?.metadata ?? {})).toHaveLength(50_000);
    const repeated = text(', k7: 2');
    const line = repeated.split('\n')[4] as string;
    expect(problemsOf(repeated).map(brief)).toEqual([['ERR_SLUICE_RULES_DUPLICATE', 5, line.lastIndexOf('k7') + 1]]);
  });

  it('an empty or comment-only text is refused at `domain` (a truncated file once dropped every limit)', () => {
    for (const text of ['', '   \n', '# nothing yet\n', '---\n', '---\n---\ndomain: a\n'])
      expect(problemsOf(text).map((p) => [p.code, p.message])).toEqual([
        ['ERR_SLUICE_RULES_MISSING_KEY', 'The document needs `domain`.'],
      ]);
  });

  it('JSON documents get line and column too', () => {
    const json =
      '{\n  "domain": "d",\n  "descriptors": [\n    { "key": "a", "rate_limit": { "unit": "day", "requests_per_unt": 1 } }\n  ]\n}\n';
    expect(problemsOf(json).map(brief)).toEqual([
      ['ERR_SLUICE_RULES_MISSING_KEY', 4, 19],
      ['ERR_SLUICE_RULES_UNKNOWN_KEY', 4, 50],
    ]);
  });

  it('text that is not a string is refused with a code', () => {
    expect(() => parseRules(42 as unknown as string)).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_RULES_INVALID_VALUE' }),
    );
  });
});

describe('a value envoyproxy/ratelimit decodes though it does not use it', () => {
  // `unlimited: true` left requests_per_unit unread: -5 loaded, where the Go decoder refuses
  // any value that is not a uint32.
  it.each(['-5', 'lots', '1.5', '99999999999', '{ a: 1 }'])(
    'requests_per_unit %s beside unlimited is refused',
    (count) => {
      const text = `domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unlimited: true, requests_per_unit: ${count} }\n`;
      expect(problemsOf(text).map((p) => p.code)).toEqual(['ERR_SLUICE_RULES_INVALID_VALUE']);
    },
  );

  it('a whole requests_per_unit, or none, beside unlimited loads', () => {
    for (const count of ['5', '']) {
      const text = `domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unlimited: true, requests_per_unit: ${count} }\n`;
      expect(parseRules(text).rules[0]?.unlimited).toBe(true);
    }
  });
});
