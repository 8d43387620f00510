import { describe, it } from 'vitest';
import { base, type ConfigCase, expectConfigError } from './support/config-error.js';

const cases: ConfigCase[] = [
  ['limit 0', { ...base, limit: 0 }, 'ERR_SLUICE_INVALID_LIMIT', ['`options.limit`', 'received 0']],
  ['limit negative', { ...base, limit: -5 }, 'ERR_SLUICE_INVALID_LIMIT', ['limit', '-5']],
  ['limit fractional', { ...base, limit: 1.5 }, 'ERR_SLUICE_INVALID_LIMIT', ['limit', '1.5']],
  ['limit a string', { ...base, limit: '10' }, 'ERR_SLUICE_INVALID_LIMIT', ['limit', '"10"']],
  ['limit NaN', { ...base, limit: Number.NaN }, 'ERR_SLUICE_INVALID_LIMIT', ['limit', 'NaN']],
  ['limit infinite', { ...base, limit: Infinity }, 'ERR_SLUICE_INVALID_LIMIT', ['limit', 'Infinity']],
  ['limit missing', { window: '1s' }, 'ERR_SLUICE_INVALID_LIMIT', ['limit', 'undefined']],
  ['window missing', { limit: 10 }, 'ERR_SLUICE_INVALID_DURATION', ['window', 'undefined']],
  ['window 0', { ...base, window: 0 }, 'ERR_SLUICE_INVALID_DURATION', ['window', 'received 0']],
  ['window negative', { ...base, window: -1000 }, 'ERR_SLUICE_INVALID_DURATION', ['window', '-1000']],
  ['window fractional ms', { ...base, window: 1.5 }, 'ERR_SLUICE_INVALID_DURATION', ['window', '1.5']],
  ['window 1.5ms', { ...base, window: '1.5ms' }, 'ERR_SLUICE_INVALID_DURATION', ['window', '"1.5ms"']],
  ['window garbage', { ...base, window: 'soon' }, 'ERR_SLUICE_INVALID_DURATION', ['window', '"soon"']],
  ['window unknown unit', { ...base, window: '2w' }, 'ERR_SLUICE_INVALID_DURATION', ['window', '"2w"']],
  ['window exponent', { ...base, window: '1e3ms' }, 'ERR_SLUICE_INVALID_DURATION', ['window', '"1e3ms"']],
  ['window negative string', { ...base, window: '-1s' }, 'ERR_SLUICE_INVALID_DURATION', ['window', '"-1s"']],
  ['window zero string', { ...base, window: '0s' }, 'ERR_SLUICE_INVALID_DURATION', ['window', '"0s"']],
  ['window empty', { ...base, window: '' }, 'ERR_SLUICE_INVALID_DURATION', ['window', '""']],
  ['limit × window too big', { limit: 1e9, window: '1d' }, 'ERR_SLUICE_INVALID_WINDOW', ['window', '"1d"']],
  // It was reported as limit × window, naming neither the burst nor its value.
  [
    'burst × window too big',
    { limit: 1, window: 1000, algorithm: 'gcra', burst: 2 ** 45 },
    'ERR_SLUICE_INVALID_BURST',
    ['burst', String(2 ** 45), 'burst × window'],
  ],
  [
    'queue.maxDelayMs × limit too big',
    { limit: 1e6, window: 1000, algorithm: 'gcra', queue: { maxDelayMs: 2 ** 30 } },
    'ERR_SLUICE_INVALID_QUEUE',
    ['queue', 'maxDelayMs × limit'],
  ],
  [
    'algorithm misspelt',
    { ...base, algorithm: 'token_bucket' },
    'ERR_SLUICE_UNKNOWN_ALGORITHM',
    ['algorithm', '"token_bucket"'],
  ],
  ['burst 0', { ...base, algorithm: 'gcra', burst: 0 }, 'ERR_SLUICE_INVALID_BURST', ['burst', 'received 0']],
  ['burst on a window', { ...base, burst: 5 }, 'ERR_SLUICE_INVALID_BURST', ['burst', '5']],
  [
    'queue on token-bucket',
    { ...base, algorithm: 'token-bucket', queue: { maxDelayMs: 100 } },
    'ERR_SLUICE_INVALID_QUEUE',
    ['queue', 'an object'],
  ],
  ['queue not an object', { ...base, algorithm: 'gcra', queue: 100 }, 'ERR_SLUICE_INVALID_QUEUE', ['queue', '100']],
  // Both read as a `maxDelayMs` left out: ERR_SLUICE_INVALID_DURATION, where `queue` is the mistake.
  ['queue an empty object', { ...base, algorithm: 'gcra', queue: {} }, 'ERR_SLUICE_INVALID_QUEUE', ['queue']],
  ['queue a list', { ...base, algorithm: 'gcra', queue: [] }, 'ERR_SLUICE_INVALID_QUEUE', ['queue']],
  [
    'queue misspelt key',
    { ...base, algorithm: 'gcra', queue: { maxDelay: 100 } },
    'ERR_SLUICE_INVALID_QUEUE',
    ['queue', 'maxDelayMs'],
  ],
  [
    'queue delay 0',
    { ...base, algorithm: 'gcra', queue: { maxDelayMs: 0 } },
    'ERR_SLUICE_INVALID_DURATION',
    ['queue.maxDelayMs', '0'],
  ],
  [
    'refill on gcra',
    { ...base, algorithm: 'gcra', refillInterval: '1s' },
    'ERR_SLUICE_INVALID_REFILL',
    ['refillInterval', '"1s"'],
  ],
  [
    'refill amount alone',
    { ...base, algorithm: 'token-bucket', refillAmount: 3 },
    'ERR_SLUICE_INVALID_REFILL',
    ['refillInterval', 'undefined'],
  ],
  [
    'refill amount 0',
    { ...base, algorithm: 'token-bucket', refillAmount: 0, refillInterval: '1s' },
    'ERR_SLUICE_INVALID_REFILL',
    ['refillAmount', '0'],
  ],
  // Regression: accepted, it made every wait of the bucket pass 2^53, which the Redis store
  // refused as no decision: under the default fail policy every request passed.
  [
    'refill from empty past 2^49 ms',
    { limit: 1, window: '1000d', algorithm: 'token-bucket', refillAmount: 10_000, refillInterval: '10000000d' },
    'ERR_SLUICE_INVALID_REFILL',
    ['refillInterval', '"10000000d"', '2^49'],
  ],
  // Accepted, it was named and sent as 10 an hour and admitted 3,600 an hour.
  [
    'refill at another rate than limit per window',
    { limit: 10, window: '1h', algorithm: 'token-bucket', refillAmount: 1, refillInterval: '1s' },
    'ERR_SLUICE_INVALID_REFILL',
    ['refillInterval', '"1s"', 'limit × refillInterval'],
  ],
  [
    'refill interval 0',
    { ...base, algorithm: 'token-bucket', refillInterval: 0 },
    'ERR_SLUICE_INVALID_DURATION',
    ['refillInterval', '0'],
  ],
  [
    'policy name with a space',
    { ...base, name: 'per second' },
    'ERR_SLUICE_INVALID_POLICY_NAME',
    ['name', '"per second"'],
  ],
  ['policies empty', { policies: [] }, 'ERR_SLUICE_INVALID_POLICIES', ['policies', 'an array']],
  ['policies not an array', { policies: 'x' }, 'ERR_SLUICE_INVALID_POLICIES', ['policies', '"x"']],
  ['a policy not an object', { policies: [7] }, 'ERR_SLUICE_INVALID_POLICIES', ['policies[0]', '7']],
  // A hole (`[, p]`) was skipped by `map`, then read as a policy: an uncoded TypeError.
  // biome-ignore lint/suspicious/noSparseArray: the hole is what is tested
  ['a hole among the policies', { policies: [, base] }, 'ERR_SLUICE_INVALID_POLICIES', ['policies[0]', 'undefined']],
  [
    'a policy with a bad limit',
    { policies: [base, { limit: -1, window: '1m' }] },
    'ERR_SLUICE_INVALID_LIMIT',
    ['policies[1].limit', '-1'],
  ],
  [
    'duplicate policy names',
    {
      policies: [
        { ...base, name: 'a' },
        { limit: 5, window: '1m', name: 'a' },
      ],
    },
    'ERR_SLUICE_DUPLICATE_POLICY',
    ['"a"'],
  ],
  [
    'a policy option misspelt',
    { policies: [{ ...base, windowMs: 5 }] },
    'ERR_SLUICE_UNKNOWN_OPTION',
    ['policies[0].windowMs'],
  ],
  [
    'limit and policies together',
    { ...base, policies: [base] },
    'ERR_SLUICE_CONFLICTING_OPTIONS',
    ['limit', 'policies'],
  ],
  [
    'windowMs (express-rate-limit)',
    { limit: 10, windowMs: 1000 },
    'ERR_SLUICE_UNKNOWN_OPTION',
    ['`windowMs`', 'did you mean `window`'],
  ],
  // Inside `policies` only the first was named, and with no hint.
  [
    "a policy's peer names and typos, all at once",
    { policies: [{ max: 10, windowMs: 60_000, brust: 3 }] },
    'ERR_SLUICE_UNKNOWN_OPTION',
    [
      '`policies[0].max` (did you mean `limit`?)',
      '`policies[0].windowMs` (did you mean `window`?)',
      '`policies[0].brust` (did you mean `burst`?)',
    ],
  ],
];

describe('bad policy options throw at construction with a stable code, naming the option and the value', () => {
  it.each(cases)('%s', (_, options, code, mentions) => expectConfigError(options, code, mentions));
});
