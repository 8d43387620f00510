import { parseRules } from '@sluice/rules';
import { describe, expect, it } from 'vitest';
import { problemsOf } from '../helpers/rules.js';

/** `levels` descriptors, each the only one under the one before, in JSON (flow) style on one line. */
function nestedJson(levels: number): string {
  let descriptor = '{"key":"k","rate_limit":{"unit":"second","requests_per_unit":1}}';
  for (let i = 1; i < levels; i++) descriptor = `{"key":"k","descriptors":[${descriptor}]}`;
  return `{"domain":"d","descriptors":[${descriptor}]}`;
}

/** The same in block style: each level indented two more spaces. */
function nestedBlock(levels: number): string {
  const lines = ['domain: d', 'descriptors:'];
  for (let i = 0; i < levels; i++) {
    const indent = '  '.repeat(2 * i + 1);
    lines.push(`${indent}- key: k`);
    lines.push(
      i === levels - 1 ? `${indent}  rate_limit: { unit: second, requests_per_unit: 1 }` : `${indent}  descriptors:`,
    );
  }
  return lines.join('\n');
}

describe('a deeply nested document', () => {
  // 600 levels (17 KB) overflowed the yaml composer's stack, reported as a syntax error; read
  // a second time in the same process, it aborted the process (SIGABRT), past any catch.
  it.each([
    ['flow (JSON)', nestedJson, 1, 1_668],
    ['block', nestedBlock, 129, 257],
  ])(
    'in %s style is refused with a code and where it goes too deep, every time it is read',
    (_, nested, line, column) => {
      for (let read = 0; read < 3; read++) {
        expect(problemsOf(nested(600))).toEqual([
          {
            code: 'ERR_SLUICE_RULES_INVALID_VALUE',
            message: 'The document nests collections more than 128 deep.',
            source: '<rules>',
            line,
            column,
          },
        ]);
      }
    },
  );

  it.each([
    ['flow (JSON)', nestedJson],
    ['block', nestedBlock],
  ])('in %s style reads as deep as 63 levels of descriptors', (_, nested) => {
    // Two collections a level (the list and the descriptor), and the document's mapping.
    const rules = parseRules(nested(63)).rules;
    expect(rules).toHaveLength(1);
    expect(rules[0]?.path).toHaveLength(63);
    expect(() => parseRules(nested(64))).toThrow(expect.objectContaining({ code: 'ERR_SLUICE_RULES_INVALID_VALUE' }));
  });
});
