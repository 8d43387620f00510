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
  [
    'a limit function with a policies list, which it would drop',
    { limit: () => 100, window: '1m', policies: [{ name: 'strict', limit: 1, window: '1h' }] },
    'ERR_SLUICE_CONFLICTING_OPTIONS',
    /`limit` as a function.*`policies`/,
  ],
  [
    'a limit function with a policies list and no window: the conflict, not the window, is named',
    { limit: () => 100, policies: [{ limit: 1, window: '1h' }] },
    'ERR_SLUICE_CONFLICTING_OPTIONS',
    /`limit` as a function.*`policies`/,
  ],
  [
    'a limit function with a policies function',
    { limit: () => 100, policies: () => [] },
    'ERR_SLUICE_CONFLICTING_OPTIONS',
    /`limit`.*put it in the policies the function returns/,
  ],
  [
    'a logger that is no object, checked before anything logs to it',
    { limit: 5, window: '1m', logger: 'console' },
    'ERR_SLUICE_INVALID_LOGGER',
    /`logger`.*"console"/,
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
    "every unknown option at once, with sluice's names for the peers' options",
    {
      max: 5,
      windowMs: 1000,
      keyGenerator: () => 'k',
      standardHeaders: true,
      handler: () => {},
      whitelist: [],
      lmit: 1,
    },
    'ERR_SLUICE_UNKNOWN_OPTION',
    /^\[sluice\] Unknown options: `max` \(did you mean `limit`\?\), `windowMs` \(did you mean `window`\?\), `keyGenerator` \(did you mean `key`\?\), `standardHeaders` \(did you mean `headers: \{ standard: 'draft-11' \}`\?\), `handler` \(did you mean `onLimited`\?\), `whitelist` \(did you mean `allowList`\?\), `lmit` \(did you mean `limit`\?\)\.$/,
  ],
  [
    "rate-limiter-flexible's names",
    { points: 5, duration: 60, keyPrefix: 'login', blockDuration: 60 },
    'ERR_SLUICE_UNKNOWN_OPTION',
    /`points` \(did you mean `limit`\?\), `duration` .*'60s'.*`keyPrefix` \(did you mean `prefix`\?\), `blockDuration` \(did you mean the adapters' `ban: \{ after, duration \}` \(`createLimiter` has no bans\)\?\)/,
  ],
  [
    "@fastify/rate-limit's and koa-ratelimit's names",
    { timeWindow: 1000, limit: 5, id: () => 'k', groupId: 'g' },
    'ERR_SLUICE_UNKNOWN_OPTION',
    /`timeWindow` \(did you mean `window`\?\), `id` \(did you mean `key`\?\), `groupId` \(did you mean `prefix`/,
  ],
  // Named without a hint, the first alone.
  [
    'a typo inside headers',
    { limit: 5, window: '1m', headers: { standrad: 'draft-7' } },
    'ERR_SLUICE_UNKNOWN_OPTION',
    /Unknown option `headers\.standrad`; did you mean `standard`\?/,
  ],
  [
    'typos inside ban, all at once',
    { limit: 5, window: '1m', ban: { after: 1, duratoin: '1h', windo: '1m' } },
    'ERR_SLUICE_UNKNOWN_OPTION',
    /`ban\.duratoin` \(did you mean `duration`\?\), `ban\.windo` \(did you mean `window`\?\)/,
  ],
  [
    'a statusCode that is no error',
    { limit: 5, window: '1m', statusCode: 200 },
    'ERR_SLUICE_INVALID_OPTION',
    /statusCode.*200/,
  ],
  ['a message of another type', { limit: 5, window: '1m', message: 42 }, 'ERR_SLUICE_INVALID_OPTION', /`message`/],
  [
    'message with onLimited',
    { limit: 5, window: '1m', message: 'x', onLimited: () => {} },
    'ERR_SLUICE_CONFLICTING_OPTIONS',
    /`message`.*`onLimited`/,
  ],
  [
    'both skip*Requests',
    { limit: 5, window: '1m', skipFailedRequests: true, skipSuccessfulRequests: true },
    'ERR_SLUICE_CONFLICTING_OPTIONS',
    /would count nothing/,
  ],
  [
    'requestWasSuccessful alone',
    { limit: 5, window: '1m', requestWasSuccessful: () => true },
    'ERR_SLUICE_CONFLICTING_OPTIONS',
    /requestWasSuccessful/,
  ],
  [
    'a non-boolean skipFailedRequests',
    { limit: 5, window: '1m', skipFailedRequests: 1 },
    'ERR_SLUICE_INVALID_OPTION',
    /skipFailedRequests/,
  ],
  [
    'an onExceeded that is no function',
    { limit: 5, window: '1m', onExceeded: 'log' },
    'ERR_SLUICE_INVALID_HANDLER',
    /onExceeded/,
  ],
  ['an allowList of numbers', { limit: 5, window: '1m', allowList: [1] }, 'ERR_SLUICE_INVALID_OPTION', /allowList/],
  // These three were accepted: an empty entry no key equals, headers given as a list (read as
  // the defaults), and a Map message (written as `{}`).
  [
    'an allowList with an empty entry',
    { limit: 5, window: '1m', allowList: [''] },
    'ERR_SLUICE_INVALID_OPTION',
    /allowList/,
  ],
  ['headers given as a list', { limit: 5, window: '1m', headers: [] }, 'ERR_SLUICE_INVALID_HEADERS', /headers/],
  ['a Map message', { limit: 5, window: '1m', message: new Map([['a', 1]]) }, 'ERR_SLUICE_INVALID_OPTION', /`message`/],
  ['a Date message', { limit: 5, window: '1m', message: new Date(0) }, 'ERR_SLUICE_INVALID_OPTION', /`message`/],
  [
    'a ban without duration',
    { limit: 5, window: '1m', ban: { after: 3 } },
    'ERR_SLUICE_INVALID_OPTION',
    /ban\.duration/,
  ],
  [
    'a ban with a bad status',
    { limit: 5, window: '1m', ban: { after: 3, duration: '1m', status: 500 } },
    'ERR_SLUICE_INVALID_OPTION',
    /ban\.status.*500/,
  ],
  [
    'a ban with an unknown option',
    { limit: 5, window: '1m', ban: { after: 3, duration: '1m', for: 1 } },
    'ERR_SLUICE_UNKNOWN_OPTION',
    /ban\.for/,
  ],
  ['a limit function with a bad window', { limit: () => 5, window: 'soon' }, 'ERR_SLUICE_INVALID_DURATION', /window/],
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
