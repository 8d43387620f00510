import { createLimiter, type RateLimitStore } from '@sluice/core';
import { createMemoryStore } from '@sluice/memory';
import { describe, expect, it } from 'vitest';
import { promiseStore } from '../helpers/stores.js';
import { base, type ConfigCase, expectConfigError } from './support/config-error.js';

/**
 * Settings that used to be accepted at start-up and then made every decision fail open (or
 * quietly fell back to a default): each must now stop the app at construction, with a code.
 */
const cases: ConfigCase[] = [
  [
    'storeTimeoutMs at 2^31, which Node fires after 1 ms',
    { ...base, storeTimeoutMs: 2 ** 31 },
    'ERR_SLUICE_INVALID_STORE_TIMEOUT',
    ['storeTimeoutMs', '2147483648', '2^31'],
  ],
  [
    'queue.maxDelayMs beyond 2^31 − 1 ms (a 30-day delay was answered after 7 ms)',
    { limit: 10, window: '1s', algorithm: 'gcra', queue: { maxDelayMs: '30d' } },
    'ERR_SLUICE_INVALID_QUEUE',
    ['queue.maxDelayMs', '"30d"'],
  ],
  [
    'a clock returning fractional ms',
    { ...base, clock: () => 1_700_000_000_000.5 },
    'ERR_SLUICE_INVALID_CLOCK',
    ['clock', '1700000000000.5'],
  ],
  ['a clock returning NaN', { ...base, clock: () => Number.NaN }, 'ERR_SLUICE_INVALID_CLOCK', ['clock', 'NaN']],
  [
    'a clock returning text',
    { ...base, clock: () => '1700000000000' },
    'ERR_SLUICE_INVALID_CLOCK',
    ['clock', '"1700000000000"'],
  ],
  [
    'store: null (a failed set-up became a per-process store)',
    { ...base, store: null },
    'ERR_SLUICE_INVALID_STORE',
    ['store', 'null'],
  ],
  [
    'onStoreError: null',
    { ...base, onStoreError: null },
    'ERR_SLUICE_INVALID_ON_STORE_ERROR',
    ['onStoreError', 'null'],
  ],
  [
    'storeTimeoutMs: null',
    { ...base, storeTimeoutMs: null },
    'ERR_SLUICE_INVALID_STORE_TIMEOUT',
    ['storeTimeoutMs', 'null'],
  ],
  ['logger: null', { ...base, logger: null }, 'ERR_SLUICE_INVALID_LOGGER', ['logger', 'null']],
  [
    "a window of ' 1m ' (was trimmed)",
    { limit: 10, window: ' 1m ' },
    'ERR_SLUICE_INVALID_DURATION',
    ['window', '" 1m "'],
  ],
  ['algorithm: null', { ...base, algorithm: null }, 'ERR_SLUICE_UNKNOWN_ALGORITHM', ['algorithm', 'null']],
  ['name: null', { ...base, name: null }, 'ERR_SLUICE_INVALID_POLICY_NAME', ['name', 'null']],
];

describe('settings that made every decision fail open or misbehave are refused at construction', () => {
  it.each(cases)('%s', (_what, options, code, mentions) => expectConfigError(options, code, mentions));

  it('the longest timer Node keeps is accepted', () => {
    expect(() => createLimiter({ ...base, storeTimeoutMs: 2 ** 31 - 1 })).not.toThrow();
    expect(() =>
      createLimiter({ limit: 10, window: '1s', algorithm: 'gcra', queue: { maxDelayMs: 2 ** 31 - 1 } }),
    ).not.toThrow();
  });

  it('a store refuses at construction the policies it cannot decide', () => {
    const store: RateLimitStore = {
      ...createMemoryStore(),
      checkPolicies(policies) {
        if (policies.length > 1) throw Object.assign(new Error('too many'), { code: 'ERR_SLUICE_INVALID_POLICIES' });
      },
    };
    expect(() => createLimiter({ store, policies: [base, { limit: 5, window: '1m' }] })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_POLICIES' }),
    );
  });
});

describe('a clock that goes bad after start-up', () => {
  // It used to reach the store, which refused it; the refusal counted as a store failure
  // and the fail policy let every request through. Now the call rejects with the clock's code.
  it.each([Number.NaN, 1.5, -1, Number.POSITIVE_INFINITY])(
    'returning %s rejects the call, never allows it',
    async (bad) => {
      let reading: number = 1_700_000_000_000;
      const limiter = createLimiter({ ...base, clock: () => reading, store: createMemoryStore() });
      expect((await limiter.consume('k')).allowed).toBe(true);
      reading = bad;
      await expect(limiter.consume('k')).rejects.toMatchObject({ code: 'ERR_SLUICE_INVALID_CLOCK' });
      await expect(limiter.peek('k')).rejects.toMatchObject({ code: 'ERR_SLUICE_INVALID_CLOCK' });
      await expect(limiter.refund('k', 1)).rejects.toMatchObject({ code: 'ERR_SLUICE_INVALID_CLOCK' });
    },
  );

  it('on a remote-looking store too (no synchronous path)', async () => {
    let reading: number = 1_700_000_000_000;
    const limiter = createLimiter({ ...base, clock: () => reading, store: promiseStore(), onStoreError: 'allow' });
    reading = Number.NaN;
    await expect(limiter.consume('k')).rejects.toMatchObject({ code: 'ERR_SLUICE_INVALID_CLOCK' });
  });
});
