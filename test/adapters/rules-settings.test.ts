import { rateLimit as expressRateLimit } from '@sluice/express';
import { rateLimit as koaRateLimit } from '@sluice/koa';
import { parseRules } from '@sluice/rules';
import { describe, expect, it } from 'vitest';

const rules = parseRules(`
domain: api
descriptors:
  - key: remote_address
    rate_limit: { unit: minute, requests_per_unit: 2 }
`);

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
