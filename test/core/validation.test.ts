import { checkOptionNames, createLimiter, SluiceError, toMs } from '@sluice/core';
import { createMemoryStore } from '@sluice/memory';
import { describe, expect, it } from 'vitest';
import { base, type ConfigCase, expectConfigError } from './support/config-error.js';

/** A store's methods without its `name`, which every log line and error about it quotes. */
const nameless = {
  consume: async () => ({ allowed: true, now: 0, outcomes: [] }),
  reset: async () => {},
  refund: async () => {},
};

const cases: ConfigCase[] = [
  ['options not an object', null as never, 'ERR_SLUICE_INVALID_OPTION', ['options', 'null']],
  ['limit a BigInt, shown as one', { ...base, limit: 10n as never }, 'ERR_SLUICE_INVALID_LIMIT', ['received 10n.']],
  ['throttle a string', { ...base, throttle: 'soft' }, 'ERR_SLUICE_INVALID_THROTTLE', ['throttle', '"soft"']],
  [
    'throttle mode unknown',
    { ...base, throttle: { mode: 'turbo' } },
    'ERR_SLUICE_INVALID_THROTTLE',
    ['throttle.mode', '"turbo"'],
  ],
  [
    'throttle mode a name every object has',
    { ...base, throttle: { mode: 'constructor' } },
    'ERR_SLUICE_INVALID_THROTTLE',
    ['throttle.mode', '"constructor"'],
  ],
  [
    'throttle mode that only prints as one',
    { ...base, throttle: { mode: ['soft'], overagePercent: 10 } },
    'ERR_SLUICE_INVALID_THROTTLE',
    ['throttle.mode', 'an array'],
  ],
  [
    'soft without a percentage',
    { ...base, throttle: { mode: 'soft' } },
    'ERR_SLUICE_INVALID_THROTTLE',
    ['overagePercent', 'undefined'],
  ],
  [
    'soft percentage 0',
    { ...base, throttle: { mode: 'soft', overagePercent: 0 } },
    'ERR_SLUICE_INVALID_THROTTLE',
    ['overagePercent', 'received 0'],
  ],
  [
    'soft percentage too big',
    { ...base, throttle: { mode: 'soft', overagePercent: 1001 } },
    'ERR_SLUICE_INVALID_THROTTLE',
    ['overagePercent', '1001'],
  ],
  [
    'soft percentage a string',
    { ...base, throttle: { mode: 'soft', overagePercent: '10' } },
    'ERR_SLUICE_INVALID_THROTTLE',
    ['overagePercent', '"10"'],
  ],
  [
    'elastic load not a function',
    { ...base, throttle: { mode: 'elastic', maxOveragePercent: 10, load: 0.5 } },
    'ERR_SLUICE_INVALID_THROTTLE',
    ['throttle.load', '0.5'],
  ],
  [
    'an option of another mode, with that mode as the hint',
    { ...base, throttle: { mode: 'hard', overagePercent: 5 } },
    'ERR_SLUICE_UNKNOWN_OPTION',
    ['`throttle.overagePercent`', "did you mean `mode: 'soft'`"],
  ],
  [
    "another mode's option, given as undefined, is left out: the other options are still checked",
    { ...base, throttle: { mode: 'hard', overagePercent: undefined, maxOveragePercent: 10 } },
    'ERR_SLUICE_UNKNOWN_OPTION',
    ["Unknown option `throttle.maxOveragePercent`; did you mean `mode: 'elastic'`?"],
  ],
  [
    "every unknown throttle option at once, each with its hint (a typo's closest name)",
    { ...base, throttle: { mode: 'elastic', maxOveragePercent: 10, overagePercent: 5, lod: () => 0 } },
    'ERR_SLUICE_UNKNOWN_OPTION',
    ["`throttle.overagePercent` (did you mean `mode: 'soft'`?)", '`throttle.lod` (did you mean `load`?)'],
  ],
  ['store not a store', { ...base, store: {} }, 'ERR_SLUICE_INVALID_STORE', ['store', 'an object']],
  ['a store without a name', { ...base, store: { ...nameless } }, 'ERR_SLUICE_INVALID_STORE', ['store', 'a `name`']],
  [
    'a store whose name is empty',
    { ...base, store: { ...nameless, name: '' } },
    'ERR_SLUICE_INVALID_STORE',
    ['store', 'a `name`'],
  ],
  ['clock not a function', { ...base, clock: 123 }, 'ERR_SLUICE_INVALID_CLOCK', ['clock', '123']],
  [
    'clock past the latest time it may read (2^50 ms)',
    { ...base, clock: () => 2 ** 50 + 1 },
    'ERR_SLUICE_INVALID_CLOCK',
    ['clock', 'from 0 to 2^50', String(2 ** 50 + 1)],
  ],
  ['prefix with a space', { ...base, prefix: 'my app' }, 'ERR_SLUICE_INVALID_PREFIX', ['prefix', '"my app"']],
  ['prefix with a brace', { ...base, prefix: 'a{b}' }, 'ERR_SLUICE_INVALID_PREFIX', ['prefix', '"a{b}"']],
  ['prefix empty', { ...base, prefix: '' }, 'ERR_SLUICE_INVALID_PREFIX', ['prefix', '""']],
  ['prefix too long', { ...base, prefix: 'p'.repeat(65) }, 'ERR_SLUICE_INVALID_PREFIX', ['prefix', 'p'.repeat(65)]],
  [
    'onStoreError unknown',
    { ...base, onStoreError: 'ignore' },
    'ERR_SLUICE_INVALID_ON_STORE_ERROR',
    ['onStoreError', '"ignore"'],
  ],
  [
    'storeTimeoutMs 0',
    { ...base, storeTimeoutMs: 0 },
    'ERR_SLUICE_INVALID_STORE_TIMEOUT',
    ['storeTimeoutMs', 'received 0'],
  ],
  [
    'storeTimeoutMs negative',
    { ...base, storeTimeoutMs: -1 },
    'ERR_SLUICE_INVALID_STORE_TIMEOUT',
    ['storeTimeoutMs', '-1'],
  ],
  [
    'storeTimeoutMs a string',
    { ...base, storeTimeoutMs: '100' },
    'ERR_SLUICE_INVALID_STORE_TIMEOUT',
    ['storeTimeoutMs', '"100"'],
  ],
  ['logger without warn', { ...base, logger: {} }, 'ERR_SLUICE_INVALID_LOGGER', ['logger', 'an object']],
  [
    'max (express-rate-limit)',
    { max: 10, window: '1s' },
    'ERR_SLUICE_UNKNOWN_OPTION',
    ['`max`', 'did you mean `limit`'],
  ],
  ['a typo', { ...base, algoritm: 'gcra' }, 'ERR_SLUICE_UNKNOWN_OPTION', ['`algoritm`', 'did you mean `algorithm`']],
  // An adapter's option given to createLimiter read as a bare "Unknown option".
  [
    "an adapter's option",
    { ...base, ban: { after: 3, duration: '1m' } },
    'ERR_SLUICE_UNKNOWN_OPTION',
    ["`ban` of the Express, Koa and Fastify adapters' `rateLimit`, which `createLimiter` does not take"],
  ],
  ['a cost', { ...base, cost: 2 }, 'ERR_SLUICE_UNKNOWN_OPTION', ['did you mean `consume(key, { cost })`']],
  // The peers' `false` refuses requests when the store fails: 'allow' alone turned it round.
  [
    "rate-limiter-flexible's store failure setting",
    { ...base, passOnStoreError: false },
    'ERR_SLUICE_UNKNOWN_OPTION',
    ["`'deny'` or `'throw'` to refuse them as their `false`"],
  ],
];

describe('bad limiter options throw at construction with a stable code, naming the option and the value', () => {
  it.each(cases)('%s', (_, options, code, mentions) => expectConfigError(options, code, mentions));

  it('an unknown option far from any known one gets no made-up suggestion', () => {
    expect(() => createLimiter({ ...base, zzzzzzzz: 1 } as never)).toThrow(/Unknown option `zzzzzzzz`\.$/);
  });

  it.each(['__proto__', 'constructor', 'toString'])(
    'an option named %s, as a JSON config may hold, is unknown and named as given',
    (name) => {
      const options = JSON.parse(`{ "limit": 1, "window": "1s", "${name}": { "limit": 5 } }`);
      expect(() => createLimiter(options)).toThrow(new RegExp(`Unknown option \`${name}\`\\.$`));
    },
  );
});

describe("a package call's unknown option is named with the closest known one and every option it takes", () => {
  it('names a near miss with its hint, and lists the options', () => {
    expect(() => createMemoryStore({ maxKey: 10 } as never)).toThrow(
      expect.objectContaining({
        code: 'ERR_SLUICE_UNKNOWN_OPTION',
        message:
          '[sluice] Unknown memory store option `maxKey` (did you mean `maxKeys`?); its only option is `maxKeys`.',
      }),
    );
  });

  // The first alone was named: a user with two mistakes fixed one and met the next.
  it('names every unknown option in one error, each with its hint', () => {
    expect(() =>
      checkOptionNames({ prefix: 'a', prefx: 1, logr: 2 }, ['client', 'prefix', 'logger'], 'Redis store'),
    ).toThrow(
      '[sluice] Unknown Redis store options `prefx` (did you mean `prefix`?), `logr` (did you mean `logger`?); the options are `client`, `prefix` and `logger`.',
    );
  });

  it("gives no alias's hint the call does not take (`max` is `limit` for a limiter, not for a store)", () => {
    expect(() => checkOptionNames({ max: 1 }, ['client', 'prefix', 'logger'], 'Redis store')).toThrow(
      '[sluice] Unknown Redis store option `max`; the options are `client`, `prefix` and `logger`.',
    );
  });

  it("names an own key only, and fails with the caller's error when given one", () => {
    const options = JSON.parse('{ "__proto__": 1, "ratePerSecond": 2 }');
    const error = (message: string) => new SluiceError('ERR_SLUICE_INVALID_TRAFFIC', message);
    expect(() => checkOptionNames(options, ['ratePerSecond'], 'traffic', error)).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_TRAFFIC', message: expect.stringContaining('`__proto__`') }),
    );
    expect(() => checkOptionNames({ ratePerSecond: 2 }, ['ratePerSecond'], 'traffic')).not.toThrow();
  });

  // Regression: options read through the prototype chain were used, though the check of names
  // looked at the object's own keys only: `Object.create({ mode: 'shadow' })` turned shadow
  // mode on unseen.
  it('refuses an option the options object inherits rather than holds', () => {
    expect(() => createLimiter(Object.create({ limit: 5, window: 1000 }))).toThrow(
      expect.objectContaining({
        code: 'ERR_SLUICE_UNKNOWN_OPTION',
        message: expect.stringContaining('`limit` is inherited'),
      }),
    );
    const throttle = Object.create({ mode: 'shadow' });
    expect(() => createLimiter({ limit: 5, window: 1000, throttle })).toThrow(
      expect.objectContaining({
        code: 'ERR_SLUICE_UNKNOWN_OPTION',
        message: expect.stringContaining('`throttle.mode` is inherited'),
      }),
    );
  });
});

describe('durations', () => {
  it.each([
    ['500ms', 500],
    ['1s', 1_000],
    ['1m', 60_000],
    ['1h', 3_600_000],
    ['1d', 86_400_000],
    ['1.5s', 1_500],
    ['0.001s', 1],
    ['2.50h', 9_000_000],
    ['1.000000000000000000ms', 1],
    [250, 250],
  ] as const)('%s is %i ms', (window, ms) => {
    expect(toMs(window, 'window')).toBe(ms);
    expect(createLimiter({ limit: 1, window, store: createMemoryStore({ maxKeys: 1 }) }).policies[0]?.windowMs).toBe(
      ms,
    );
  });

  // Regression: read as a double, '1.0000000000000001ms' was taken for 1 ms.
  it.each([
    '1.5ms',
    '1.0000000000000001ms',
    '1.0000000000000001s',
    '0.0001s',
    '1.s',
    '104249991375d',
    0,
    -1,
    '-5s',
    '1 s',
    'soon',
    '1e3s',
    1.5,
    Number.NaN,
    Infinity,
    null,
    {},
  ])('rejects %s with ERR_SLUICE_INVALID_DURATION', (value) => {
    expect(() => toMs(value, 'window')).toThrow(expect.objectContaining({ code: 'ERR_SLUICE_INVALID_DURATION' }));
  });
});
