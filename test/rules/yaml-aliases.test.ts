import { parseRules } from '@sluice/rules';
import { describe, expect, it } from 'vitest';
import { LineCounter, parseDocument, visit, type YAMLMap } from 'yaml';
import { pairsOf } from '../../packages/rules/src/aliases.js';
import { createReader } from '../../packages/rules/src/reader.js';
import { problemsOf } from '../helpers/rules.js';

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

  // Regression: a key written before `<<` won, as the YAML merge-key rule has it, where
  // envoyproxy/ratelimit's decoder applies the merge where it stands: 100 a second here, 5 there.
  it('a merge key replaces the keys written before it, as envoyproxy/ratelimit reads it', () => {
    const limits = parseRules(
      [
        'domain: d',
        'descriptors:',
        '  - { key: a, rate_limit: &strict { unit: second, requests_per_unit: 5 } }',
        '  - { key: b, rate_limit: &loose { unit: second, requests_per_unit: 100 } }',
        '  - { key: c, rate_limit: { requests_per_unit: 100, <<: *strict } }',
        '  - { key: d, rate_limit: { <<: *strict, requests_per_unit: 100 } }',
        // Of a list of merges the first wins.
        '  - { key: e, rate_limit: { <<: [*strict, *loose] } }',
        '',
      ].join('\n'),
    ).rules.map((r) => r.policies[0]?.limit);
    expect(limits).toEqual([5, 100, 5, 100, 5]);
  });

  // The Go decoder fills the struct a merge gave `rate_limit` key by key (name and all, which
  // `replaces` reads): refused here, where the second mapping is given, never read another way.
  it('a mapping meeting a mapping under one key through a merge is refused where it is given', () => {
    const problemsAt = (...descriptors: string[]) =>
      problemsOf(['domain: d', 'descriptors:', ...descriptors, ''].join('\n')).map((p) => [p.code, p.line]);
    const base = '  - &b { key: b, rate_limit: { unit: minute, requests_per_unit: 2, name: bn } }';
    expect(problemsAt(base, '  - { <<: *b, key: c, rate_limit: { unit: second, requests_per_unit: 20 } }')).toEqual([
      ['ERR_SLUICE_RULES_CONFLICT', 4],
    ]);
    const other = '  - &a { key: a, rate_limit: { unit: second, requests_per_unit: 1 } }';
    expect(problemsAt(base, other, '  - {', '      <<: [*a, *b],', '      key: m }')).toEqual([
      ['ERR_SLUICE_RULES_CONFLICT', 6],
    ]);
  });

  // Regression: the check of what a second mapping leaves out expanded the first anew, outside
  // the merges being expanded, so a merge back into its own mapping overflowed the stack.
  it('a merge back into its mapping, met while two mappings are compared, is refused', () => {
    const text = [
      'domain: d',
      'descriptors:',
      '  - &m',
      '    key: k',
      '    <<: { rate_limit: { unit: second, requests_per_unit: 1, name: n } }',
      '    rate_limit: &r',
      '      <<: *m',
      '      unit: minute',
      '',
    ].join('\n');
    expect(problemsOf(text).map((p) => p.message)).toContainEqual(
      expect.stringContaining('refers to a mapping that contains it'),
    );
  });

  // Where the second gives every key the first does, filling in and replacing agree.
  it('a mapping meeting a mapping with no fewer keys through a merge replaces it', () => {
    const rules = parseRules(
      [
        'domain: d',
        'descriptors:',
        '  - &b { key: b, rate_limit: { unit: minute, requests_per_unit: 2 } }',
        '  - { <<: *b, key: c, rate_limit: { unit: second, requests_per_unit: 20, name: c } }',
        '',
      ].join('\n'),
    ).rules;
    expect(rules.map((r) => [r.rateLimit?.unit, r.rateLimit?.requestsPerUnit, r.name])).toEqual([
      ['minute', 2, undefined],
      ['second', 20, 'c'],
    ]);
  });

  // Regression: a problem of a key a merge brought was reported at the base's key, once, so a
  // valid base was named and every descriptor but the first went unreported.
  it('a conflict of a merged key is reported at each descriptor that merges it', () => {
    const text = [
      'domain: d',
      'descriptors:',
      '  - &B { key: b, value: "x*", share_threshold: true, rate_limit: { unit: second, requests_per_unit: 1 } }',
      '  - { <<: *B, value: v1 }',
      '  - { <<: *B, value: v2 }',
      '',
    ].join('\n');
    expect(problemsOf(text).map((p) => [p.code, p.line])).toEqual([
      ['ERR_SLUICE_RULES_CONFLICT', 4],
      ['ERR_SLUICE_RULES_CONFLICT', 5],
    ]);
  });

  // A nested descriptor's key is that descriptor's, not its parent's: each is reported.
  it('a conflict of a parent and of its nested descriptor are reported at each', () => {
    const text = [
      'domain: d',
      'descriptors:',
      '  - descriptors:',
      '      - &c { key: c, share_threshold: true, rate_limit: { unit: second, requests_per_unit: 1 } }',
      '    <<: *c',
      '',
    ].join('\n');
    expect(problemsOf(text).map((p) => [p.code, p.line])).toEqual([
      ['ERR_SLUICE_RULES_CONFLICT', 3],
      ['ERR_SLUICE_RULES_CONFLICT', 4],
    ]);
  });

  // Mappings laid over each other where a merge met a mapping took time doubling with each
  // merge of mappings that aliases multiply (36 merges of a 16 KB file: 14 s; this one, past
  // a minute): a mapping met by a merge is replaced whole, each mapping expanded once.
  it('merges of mappings that aliases multiply are read in time linear in the file', () => {
    const slots = 8;
    const levels = 44;
    const lines = ['domain: d', 'descriptors:'];
    for (let j = 0; j < slots; j++) lines.push(`  - { key: l0_${j}, x: &l0_${j} { unit: second } }`);
    for (let i = 1; i <= levels; i++) {
      for (let j = 0; j < slots; j++) {
        // Two ways down to different mappings, so the chains below differ by path.
        const [a, b] = [(j + 1) % slots, j < 2 ? 1 - j : j];
        lines.push(`  - { key: l${i}_${j}, x: &l${i}_${j} { a: *l${i - 1}_${a}, b: *l${i - 1}_${b} } }`);
      }
    }
    const merged = Array.from({ length: levels }, (_, k) => `{ x: *l${levels}_${k % slots} }`);
    lines.push(`  - <<: [${merged.join(', ')}]`, '    key: bomb', '');
    // Every descriptor's `x` is refused, the bomb's too, and the file is read to its end.
    const problems = problemsOf(lines.join('\n'));
    expect(new Set(problems.map((p) => p.code))).toEqual(new Set(['ERR_SLUICE_RULES_UNKNOWN_KEY']));
    expect(problems).toHaveLength((levels + 1) * slots + 1);
  });

  // Regressions: a merge back into its own mapping was skipped, and an alias to a list of
  // mappings merged, where the Go decoder refuses both.
  it('a merge into the mapping holding it, or of an alias to a list, is refused', () => {
    for (const [text, line] of [
      ['  - &a { key: k, rate_limit: { unit: second, requests_per_unit: 1 }, <<: *a }', 3],
      ['  - { key: k, rate_limit: &r { unit: second, requests_per_unit: 1, <<: *r } }', 3],
      ['  - { key: l, descriptors: &list [{ key: x }] }\n  - { key: k, <<: *list }', 4],
    ] as const) {
      const problems = problemsOf(`domain: d\ndescriptors:\n${text}\n`);
      expect(problems.map((p) => [p.code, p.line])).toContainEqual(['ERR_SLUICE_RULES_INVALID_VALUE', line]);
    }
  });

  // Regression: an expansion with a refused merge was not kept, so each mapping merging it,
  // twice a level, expanded it anew: 22 levels of a 1 KB file took 50 s.
  it('a refused merge is expanded once, however many mappings merge it', () => {
    const lines = ['domain: d', 'descriptors:', '  - &x0', '    key: k0', '    <<: { <<: *x0 }'];
    for (let i = 1; i <= 40; i++) lines.push(`  - &x${i}`, `    key: k${i}`, `    <<: [*x${i - 1}, *x${i - 1}]`);
    const problems = problemsOf(lines.join('\n'));
    expect(problems.map((p) => [p.code, p.line])).toContainEqual(['ERR_SLUICE_RULES_INVALID_VALUE', 5]);
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

  it('a descriptor that aliases itself is refused at the alias (it overflowed the stack, with no code)', () => {
    const perSecond = 'rate_limit: { unit: second, requests_per_unit: 1 }';
    const cycles = [
      // Itself among its own children.
      `domain: d\ndescriptors:\n  - &a { key: k, ${perSecond}, descriptors: [ *a ] }\n`,
      // A `descriptors` list among its own descriptors' children.
      'domain: d\ndescriptors: &l\n  - { key: a, descriptors: *l }\n',
      // A child merging its parent, and so the list that holds the child.
      'domain: d\ndescriptors:\n  - &a { key: k, descriptors: [ { <<: *a, value: v } ] }\n',
    ];
    expect(cycles.map((text) => problemsOf(text).map((p) => [p.code, p.line, p.column]))).toEqual([
      [['ERR_SLUICE_RULES_INVALID_VALUE', 3, 85]],
      [['ERR_SLUICE_RULES_INVALID_VALUE', 3, 28]],
      [['ERR_SLUICE_RULES_INVALID_VALUE', 3, 31]],
    ]);
    expect(problemsOf(cycles[0] as string)[0]?.message).toContain('contains it');
    // The same descriptor aliased beside itself, not inside, is no cycle.
    const shared = parseRules(
      `domain: d\ndescriptors:\n  - &a { key: a, ${perSecond} }\n  - key: b\n    descriptors: [ *a ]\n`,
    );
    expect(shared.rules.map((r) => r.path.map((e) => e.key).join('/'))).toEqual(['a', 'b/a']);
  });

  it('metadata that aliases itself is refused at the alias (freezing it overflowed the stack)', () => {
    const text =
      'domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, requests_per_unit: 1 }\n    metadata: &m { a: *m }\n';
    expect(problemsOf(text).map((p) => [p.code, p.line, p.column])).toEqual([
      ['ERR_SLUICE_RULES_INVALID_VALUE', 5, 23],
    ]);
  });

  it('metadata that aliased descriptors share is read once, as one frozen value', () => {
    const text = [
      'domain: d',
      'descriptors:',
      `  - &l0 { key: k0, rate_limit: { unit: second, requests_per_unit: 1 }, metadata: { ids: [${'1, '.repeat(999)}1] } }`,
      `  - &l1 { key: k1, descriptors: [${Array.from({ length: 10 }, (_, j) => `{ <<: *l0, value: v${j} }`).join(', ')}] }`,
      `  - { key: k2, descriptors: [${Array.from({ length: 10 }, (_, j) => `{ <<: *l1, value: v${j} }`).join(', ')}] }`,
      '',
    ].join('\n');
    const rules = parseRules(text).rules;
    expect(rules).toHaveLength(1 + 10 + 100);
    const metadata = new Set(rules.map((rule) => rule.metadata));
    expect(metadata.size).toBe(1);
    expect(Object.isFrozen((rules[0]?.metadata as { ids?: number[] } | undefined)?.ids)).toBe(true);
  });

  it('metadata that aliases multiply is refused past the budget of values (2,000 copies of a list took 26 s)', () => {
    // 200 mappings each holding a 1,000-item list: 200,000 values from 7 KB.
    const text = [
      'domain: d',
      'descriptors:',
      `  - { key: a, rate_limit: { unit: second, requests_per_unit: 1 }, metadata: &big [${'1, '.repeat(999)}1] }`,
      ...Array.from(
        { length: 200 },
        (_, i) =>
          `  - { key: b, value: v${i}, rate_limit: { unit: second, requests_per_unit: 1 }, metadata: { x: *big } }`,
      ),
      '',
    ].join('\n');
    const problems = problemsOf(text);
    expect(problems.map((p) => p.code)).toEqual(['ERR_SLUICE_RULES_INVALID_VALUE']);
    expect(problems[0]?.message).toContain(`more than ${100_000} values`);
    // Within the budget (90 copies), every rule has its metadata.
    const within = parseRules(
      text
        .split('\n')
        .slice(0, 3 + 90)
        .join('\n'),
    ).rules;
    expect(within.slice(1).map((rule) => (rule.metadata as { x: number[] }).x.length)).toEqual(Array(90).fill(1000));
  });

  it.each([
    ['!!binary aGVsbG8=', '!!binary'],
    ['!!set { a, b }', '!!set'],
    ['!!omap [ { a: 1 } ]', '!!omap'],
    ['!!timestamp 2026-01-01', '!!timestamp'],
  ])('metadata holding %s is refused with a code, not a TypeError or a value JSON cannot carry', (value, tag) => {
    const text = `domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, requests_per_unit: 1 }\n    metadata:\n      a: ${value}\n`;
    // Under a `%YAML 1.1` directive too, which turned the tags' resolution off: read as text.
    for (const [directive, line] of [
      ['', 6],
      ['%YAML 1.1\n---\n', 8],
    ] as const) {
      const problems = problemsOf(`${directive}${text}`);
      expect(problems.map((p) => [p.code, p.line])).toEqual([['ERR_SLUICE_RULES_INVALID_VALUE', line]]);
      expect(problems[0]?.message).toContain(`\`${tag}\``);
    }
  });

  it('descriptors that aliases multiply are refused past the budget (1.5 KB once took 10 s to read)', () => {
    // Each level lists 10 merged copies of the level below: 10^6 descriptors from 1.7 KB.
    const multiplied = (levels: number) => {
      let text = 'domain: d\ndescriptors:\n  - &l0 { key: k0, rate_limit: { unit: second, requests_per_unit: 1 } }\n';
      for (let i = 1; i <= levels; i++) {
        const copies = Array.from({ length: 10 }, (_, j) => `{ <<: *l${i - 1}, value: v${j} }`);
        text += `  - &l${i} { key: k${i}, descriptors: [${copies.join(', ')}] }\n`;
      }
      return text;
    };
    const problems = problemsOf(multiplied(6));
    expect(problems.map((p) => [p.code, p.line])).toEqual([['ERR_SLUICE_RULES_INVALID_VALUE', 4]]);
    expect(problems[0]?.message).toContain(`more than ${10_000} descriptors`);
    // Within the budget, the copies are read: 10 + 100 + 1,000 leaves below the top ones.
    expect(parseRules(multiplied(3)).rules).toHaveLength(1 + 10 + 100 + 1000);
  });

  it('a document with more YAML nodes than the least budget may read one descriptor per node', () => {
    // 2,000 written descriptors (some 26,000 nodes), aliased 6 times over: 14,000 read.
    const written = Array.from({ length: 2000 }, (_, i) => `{ key: k, value: v${i}, rate_limit: *r }`);
    const text = [
      'domain: d',
      'descriptors:',
      '  - key: limit',
      '    rate_limit: &r { unit: second, requests_per_unit: 1 }',
      `  - { key: a0, descriptors: &all [${written.join(', ')}] }`,
      ...Array.from({ length: 6 }, (_, i) => `  - { key: a${i + 1}, descriptors: *all }`),
      '',
    ].join('\n');
    expect(parseRules(text).rules).toHaveLength(1 + 7 * 2000);
  });
});

// Each mapping expanded its whole chain again, copying it at every link: 2,000 links (125 KB)
// took 34 s, in every server watching the rules. Counted in pairs, not timed.
describe('a chain of merge keys', () => {
  const chain = (links: number) =>
    [
      'domain: d',
      'descriptors:',
      '  - { key: k0, rate_limit: &m0 { unit: second, requests_per_unit: 1 } }',
      ...Array.from(
        { length: links - 1 },
        (_, i) => `  - { key: k${i + 1}, rate_limit: &m${i + 1} { <<: *m${i}, unit: minute } }`,
      ),
    ].join('\n');

  it('reads every link as the merge-key rule says, up to 128 mappings', () => {
    const rules = parseRules(chain(128)).rules;
    expect(rules).toHaveLength(128);
    expect(rules.map((r) => [r.policies[0]?.limit, r.policies[0]?.window]).slice(0, 2)).toEqual([
      [1, 1_000],
      [1, 60_000],
    ]);
    expect(rules.at(-1)?.policies[0]).toMatchObject({ limit: 1, window: 60_000 });
  });

  it('expands each mapping once, to each key once', () => {
    const lines = new LineCounter();
    const doc = parseDocument(chain(128), { lineCounter: lines, merge: true });
    const reader = createReader('<rules>', doc, lines, []);
    const maps: YAMLMap[] = [];
    visit(doc, { Map: (key, node) => void (key === 'value' && node.has('unit') ? maps.push(node) : undefined) });
    expect(maps).toHaveLength(128);
    // From the last link first: each of the others is then expanded already.
    const taken = maps.reverse().reduce((sum, map) => sum + pairsOf(reader, map).length, 0);
    // `unit` and `requests_per_unit` per link, where the chain gave each link all before it.
    expect(taken).toBe(2 * 128);
    expect(pairsOf(reader, maps[0] as YAMLMap)).toBe(pairsOf(reader, maps[0] as YAMLMap));
  });

  // Aliases let a chain run deeper than text nests: 3,000 links overflowed the stack, a
  // RangeError with no code, when the last link was read first.
  it('refuses a longer chain with a code, whichever link is read first', () => {
    const unread = (links: number) =>
      [
        'domain: d',
        'descriptors:',
        '  - key: k',
        '    metadata:',
        '      - &m0 { unit: second }',
        ...Array.from({ length: links - 1 }, (_, i) => `      - &m${i + 1} { <<: *m${i} }`),
        `    rate_limit: { <<: *m${links - 1}, requests_per_unit: 1 }`,
      ].join('\n');
    for (const text of [chain(129), chain(3_000), unread(3_000)]) {
      expect(problemsOf(text)).toContainEqual(
        expect.objectContaining({
          code: 'ERR_SLUICE_RULES_INVALID_VALUE',
          message: 'Merge keys chain more than 128 mappings.',
        }),
      );
    }
  });

  it('refuses descriptors nested through aliases deeper than text may nest them', () => {
    const lines = [
      'domain: d',
      'descriptors:',
      '  - &d0 { key: k, rate_limit: { unit: second, requests_per_unit: 1 } }',
    ];
    for (let i = 1; i < 2_000; i++) lines.push(`  - &d${i} { key: k${i}, descriptors: [*d${i - 1}] }`);
    const problems = problemsOf(lines.join('\n'));
    expect(problems.map((p) => p.message)).toContain('Descriptors nest more than 64 levels deep.');
  });
});

// An alias to no anchor was read as no value: a mistyped `*defualt` left a rule without a
// limit, a mistyped value widened a rule to every value of its key, `shadow_mode: *on` read
// as false. envoyproxy/ratelimit's decoder refuses the file ("unknown anchor").
describe('an alias that names no anchor before it', () => {
  const text = (line: string) =>
    [
      'domain: api',
      'descriptors:',
      '  - key: route',
      '    value: &login POST /login',
      '    rate_limit: &default { unit: minute, requests_per_unit: 10 }',
      '  - key: route',
      `    ${line}`,
      '',
    ].join('\n');
  it.each([
    ['rate_limit: *defualt', 17],
    ['value: *lgoin', 12],
    ['shadow_mode: *on', 18],
    ['descriptors: *nested', 18],
    ['<<: *base', 9],
  ])('%s is refused at the alias', (line, column) => {
    expect(problemsOf(text(line)).map((p) => [p.code, p.line, p.column, p.message])).toEqual([
      ['ERR_SLUICE_RULES_SYNTAX', 7, column, expect.stringContaining(`\`*${line.split('*')[1]}\` names no anchor`)],
    ]);
  });

  it('every such alias is reported, and the document is read no further', () => {
    // Read on, `key: *k` would also be "`key` must not be empty".
    const text = 'domain: d\ndescriptors:\n  - key: *k\n    rate_limit: *r\n';
    expect(problemsOf(text).map((p) => [p.code, p.line, p.column])).toEqual([
      ['ERR_SLUICE_RULES_SYNTAX', 3, 10],
      ['ERR_SLUICE_RULES_SYNTAX', 4, 17],
    ]);
  });

  it('an anchor of one document is no anchor in the next', () => {
    const text = [
      'domain: a',
      'descriptors:',
      '  - key: k',
      '    rate_limit: &r { unit: second, requests_per_unit: 1 }',
      '---',
      'domain: b',
      'descriptors:',
      '  - key: k',
      '    rate_limit: *r',
      '',
    ].join('\n');
    expect(problemsOf(text).map((p) => [p.code, p.line])).toEqual([['ERR_SLUICE_RULES_SYNTAX', 9]]);
  });

  it('an alias before its anchor is refused; after it, it reads what the anchor holds', () => {
    const before =
      'domain: d\ndescriptors:\n  - key: a\n    rate_limit: *r\n  - key: b\n    rate_limit: &r { unit: second, requests_per_unit: 1 }\n';
    expect(problemsOf(before).map((p) => [p.code, p.line])).toEqual([['ERR_SLUICE_RULES_SYNTAX', 4]]);
    const after = parseRules(
      text('value: *login\n    rate_limit: *default').replace(
        '  - key: route\n    value: *login',
        '  - key: path\n    value: *login',
      ),
    );
    expect(after.rules.map((r) => [r.path, r.rateLimit?.requestsPerUnit])).toEqual([
      [[{ key: 'route', value: 'POST /login' }], 10],
      [[{ key: 'path', value: 'POST /login' }], 10],
    ]);
  });
});
