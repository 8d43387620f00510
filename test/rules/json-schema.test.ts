import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { parseRules } from '@sluice/rules';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const require = createRequire(import.meta.url);
const schema = JSON.parse(readFileSync(require.resolve('@sluice/rules/schema.json'), 'utf8'));
const validate = new Ajv({ allErrors: true }).compile(schema);
const fixtures = fileURLToPath(new URL('fixtures/', import.meta.url));

describe('the published JSON Schema', () => {
  it.each(readdirSync(fixtures))('accepts %s, which parseRules accepts', (name) => {
    const text = readFileSync(`${fixtures}${name}`, 'utf8');
    expect(() => parseRules(text)).not.toThrow();
    expect(validate(parse(text)), JSON.stringify(validate.errors)).toBe(true);
  });

  it('accepts sluice policies and throttle', () => {
    const doc = {
      domain: 'api',
      descriptors: [
        {
          key: 'user',
          policies: [
            { name: 'burst', limit: 5, window: '10s', algorithm: 'gcra', burst: 10, queue: { maxDelayMs: '1s' } },
            { limit: 1000, window: 86_400_000 },
          ],
          throttle: { mode: 'soft', overagePercent: 20 },
        },
      ],
    };
    expect(() => parseRules(JSON.stringify(doc))).not.toThrow();
    expect(validate(doc), JSON.stringify(validate.errors)).toBe(true);
  });

  it('accepts unlimited with no unit, an empty one or `unknown`, and refuses it with a unit, as parseRules does', () => {
    const doc = (rateLimit: object) => ({ domain: 'd', descriptors: [{ key: 'k', rate_limit: rateLimit }] });
    for (const unit of [null, '', 'unknown']) {
      expect(() => parseRules(JSON.stringify(doc({ unlimited: true, unit })))).not.toThrow();
      expect(validate(doc({ unlimited: true, unit })), JSON.stringify(validate.errors)).toBe(true);
    }
    expect(() => parseRules(JSON.stringify(doc({ unlimited: true, unit: 'day' })))).toThrow();
    expect(validate(doc({ unlimited: true, unit: 'day' }))).toBe(false);
  });

  it.each([
    ['a misspelt key', { domain: 'd', descriptors: [{ key: 'k', rate_limit: { unit: 'day', request_per_unit: 5 } }] }],
    [
      'a bad unit',
      { domain: 'd', descriptors: [{ key: 'k', rate_limit: { unit: 'fortnight', requests_per_unit: 5 } }] },
    ],
    [
      'rate_limit with policies',
      {
        domain: 'd',
        descriptors: [
          { key: 'k', rate_limit: { unit: 'day', requests_per_unit: 1 }, policies: [{ limit: 1, window: '1s' }] },
        ],
      },
    ],
    [
      'an unknown algorithm',
      { domain: 'd', descriptors: [{ key: 'k', policies: [{ limit: 1, window: '1s', algorithm: 'gcr' }] }] },
    ],
    ['no domain', { descriptors: [] }],
  ])('refuses %s, as parseRules does', (_what, doc) => {
    expect(() => parseRules(JSON.stringify(doc))).toThrow();
    expect(validate(doc)).toBe(false);
  });
});
