import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rateLimit as expressRateLimit } from '@sluice/express';
import { rateLimit as koaRateLimit } from '@sluice/koa';
import { parseRules, watchRules } from '@sluice/rules';
import express from 'express';
import request from 'supertest';
import { describe, expect, it } from 'vitest';

const rulesText = `
domain: api
descriptors:
  - key: remote_address
    rate_limit: { unit: minute, requests_per_unit: 2 }
`;
const rules = parseRules(rulesText);

// Rules mode creates each rule's limiter on first use, so these settings used to pass
// construction and fail (or, for `store: null`, quietly become the default store) per request.
const badSettings = [
  ['store: null', { store: null }, 'ERR_SLUICE_INVALID_STORE'],
  ["onStoreError: 'bogus'", { onStoreError: 'bogus' }, 'ERR_SLUICE_INVALID_ON_STORE_ERROR'],
  ['storeTimeoutMs: -1', { storeTimeoutMs: -1 }, 'ERR_SLUICE_INVALID_STORE_TIMEOUT'],
  ['logger: 5', { logger: 5 }, 'ERR_SLUICE_INVALID_LOGGER'],
  ['clock: 5', { clock: 5 }, 'ERR_SLUICE_INVALID_CLOCK'],
] as const;

describe.each([
  ['express', expressRateLimit],
  ['koa', koaRateLimit],
] as const)('%s with rules: bad limiter settings fail at construction', (_name, rateLimit) => {
  it.each(badSettings)('%s', (_label, settings, code) => {
    expect(() => rateLimit({ rules, ...(settings as object) })).toThrow(expect.objectContaining({ code }));
  });
});

describe.each([
  ['express', expressRateLimit],
  ['koa', koaRateLimit],
] as const)('%s with rules: a domain the rules lack', (_name, rateLimit) => {
  it('fails at construction for a rule set, which never gains one', () => {
    expect(() => rateLimit({ rules, domain: 'apl' })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_OPTION', message: expect.stringContaining('["api"]') }),
    );
  });

  it('is warned of once for a watcher, whose next reload may bring it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-domain-'));
    writeFileSync(
      join(dir, 'rules.yaml'),
      'domain: api\ndescriptors:\n  - key: remote_address\n    rate_limit: { unit: minute, requests_per_unit: 2 }\n',
    );
    const watcher = watchRules(dir);
    try {
      const warnings: string[] = [];
      const logger = { warn: (message: string) => warnings.push(message), error: () => {} };
      rateLimit({ rules: watcher, domain: 'apl', logger });
      rateLimit({ rules: watcher, domain: 'api', logger });
      expect(warnings).toEqual([
        expect.stringMatching(/^\[sluice\] WRN_SLUICE_UNKNOWN_DOMAIN: the rules hold no domain `apl`/),
      ]);
    } finally {
      watcher.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

// A reload that renamed the domain (`api` to `API`) turned every limit off without a word.
describe('express with rules: a reload that drops the domain', () => {
  it('is warned of when the set comes into force, and again for each later set that lacks it', async () => {
    const renamed = parseRules(rulesText.replace('domain: api', 'domain: API'));
    const watcher = { current: rules };
    const warnings: string[] = [];
    const logger = { warn: (message: string) => warnings.push(message) };
    const app = express().use(expressRateLimit({ rules: watcher, domain: 'api', logger }));
    app.get('/', (_req, res) => res.send('ok'));
    const statuses = async () => {
      const list: number[] = [];
      for (let i = 0; i < 3; i++) list.push((await request(app).get('/')).status);
      return list;
    };
    expect(await statuses()).toEqual([200, 200, 429]);
    expect(warnings).toEqual([]);
    watcher.current = renamed;
    expect(await statuses()).toEqual([200, 200, 200]);
    expect(warnings).toEqual([
      expect.stringMatching(
        /^\[sluice\] WRN_SLUICE_UNKNOWN_DOMAIN: the rules now in force hold no domain `api` \(they hold \["API"\]\)/,
      ),
    ]);
    watcher.current = rules;
    expect(await statuses()).toEqual([429, 429, 429]);
    watcher.current = parseRules(rulesText.replace('domain: api', 'domain: API'));
    await statuses();
    expect(warnings).toHaveLength(2);
  });
});

describe('rules descriptors name built-in keys or fields of their own, never what every object has', () => {
  it.each(['toString', 'constructor', '__proto__'])('a descriptor key %s is refused at construction', (key) => {
    expect(() => expressRateLimit({ rules, descriptors: [[key]] })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_OPTION' }),
    );
  });
});
