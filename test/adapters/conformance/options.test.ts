import { describe, expect, it } from 'vitest';
import { harnesses } from '../harness/index.js';

const cases: [string, Record<string, unknown>, string, RegExp][] = [
  ['a misspelt option', { limit: 5, windowMs: 1000 }, 'ERR_SLUICE_UNKNOWN_OPTION', /`windowMs`.*`window`/],
  ['a bad limit', { limit: -1, window: '1m' }, 'ERR_SLUICE_INVALID_LIMIT', /limit`.*received -1/],
  [
    'a draft it does not speak',
    { limit: 5, window: '1m', headers: { standard: 'draft-8' } },
    'ERR_SLUICE_INVALID_HEADERS',
    /headers\.standard.*"draft-8"/,
  ],
  [
    'a non-boolean legacy',
    { limit: 5, window: '1m', headers: { legacy: 'yes' } },
    'ERR_SLUICE_INVALID_HEADERS',
    /headers\.legacy/,
  ],
  [
    'an unknown header option',
    { limit: 5, window: '1m', headers: { draft: 7 } },
    'ERR_SLUICE_UNKNOWN_OPTION',
    /headers\.draft/,
  ],
  [
    'an IPv6 prefix out of range',
    { limit: 5, window: '1m', ipv6Subnet: 200 },
    'ERR_SLUICE_INVALID_IPV6_SUBNET',
    /ipv6Subnet.*200/,
  ],
  [
    'key with ipv6Subnet',
    { limit: 5, window: '1m', key: () => 'k', ipv6Subnet: 48 },
    'ERR_SLUICE_CONFLICTING_OPTIONS',
    /ipv6Subnet/,
  ],
  [
    'a policies function with limit',
    { limit: 5, policies: () => [] },
    'ERR_SLUICE_CONFLICTING_OPTIONS',
    /`limit`.*`policies`/,
  ],
  ['a zero cost', { limit: 5, window: '1m', cost: 0 }, 'ERR_SLUICE_INVALID_COST', /`cost`.*0/],
  ['a skip that is not a function', { limit: 5, window: '1m', skip: true }, 'ERR_SLUICE_INVALID_HANDLER', /`skip`/],
  [
    'an onLimited that is not a function',
    { limit: 5, window: '1m', onLimited: 429 },
    'ERR_SLUICE_INVALID_HANDLER',
    /`onLimited`/,
  ],
  [
    'a bad option shared by every tier',
    { policies: () => [], onStoreError: 'maybe' },
    'ERR_SLUICE_INVALID_ON_STORE_ERROR',
    /onStoreError/,
  ],
];

describe.each(harnesses)('$name: bad configuration fails at start-up with a code', (harness) => {
  it.each(cases)('%s', async (_, options, code, message) => {
    const error = await harness.configure(options).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ code });
    expect((error as Error).message).toMatch(message);
  });

  it('accepts a valid configuration', async () => {
    await expect(
      harness.configure({ limit: 5, window: '1m', headers: { standard: 'draft-6', legacy: true } }),
    ).resolves.toBeUndefined();
  });
});
