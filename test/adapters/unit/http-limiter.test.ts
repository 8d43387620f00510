import {
  createHttpLimiter,
  type HttpLimiterOptions,
  MAX_TIER_LIMITERS,
  type RateLimitStore,
  SluiceError,
  UNKNOWN_IP_KEY,
} from '@sluice/core';
import { createMemoryStore } from '@sluice/memory';
import { parseRules } from '@sluice/rules';
import { describe, expect, it } from 'vitest';
import { clockAt, collectingLogger } from '../helpers.js';
import { type FakeRequest, fakeBinding } from './fake-binding.js';

interface TieredRequest extends FakeRequest {
  tier?: string;
}

const binding = fakeBinding<TieredRequest>();

const from = (ip: string | undefined, tier?: string): TieredRequest => ({ ip, headers: {}, ...(tier ? { tier } : {}) });

/** A memory store that records the namespace of every decision. */
function recordingStore(): RateLimitStore & { namespaces: string[] } {
  const inner = createMemoryStore();
  const namespaces: string[] = [];
  return {
    name: 'recording',
    local: true,
    namespaces,
    consume: (request) => {
      namespaces.push(request.namespace);
      return inner.consume(request);
    },
    reset: (...args) => inner.reset(...args),
    refund: (request) => inner.refund(request),
  };
}

describe('createHttpLimiter', () => {
  it('keys requests without a client address together and warns once', async () => {
    const logger = collectingLogger();
    const limiter = createHttpLimiter({ limit: 1, window: '1m', logger, clock: clockAt(0) }, binding);
    const first = await limiter.handle(from(undefined), {});
    expect(first.decision?.key).toBe(UNKNOWN_IP_KEY);
    expect((await limiter.handle(from(''), {})).action).toBe('limited');
    expect(logger.codes()).toEqual(['WRN_SLUICE_UNDEFINED_IP']);
  });

  it('uses an address it cannot parse as it is, and warns once', async () => {
    const logger = collectingLogger();
    const limiter = createHttpLimiter({ limit: 5, window: '1m', logger, clock: clockAt(0) }, binding);
    expect((await limiter.handle(from('unix:/run/app.sock'), {})).decision?.key).toBe('unix:/run/app.sock');
    await limiter.handle(from('garbage'), {});
    expect(logger.codes()).toEqual(['WRN_SLUICE_INVALID_IP']);
  });

  it('rejects the request when a policies function returns no valid policies', async () => {
    const limiter = createHttpLimiter({ policies: () => [{ limit: 0, window: '1m' }] }, binding);
    await expect(limiter.handle(from('1.2.3.4'), {})).rejects.toMatchObject({ code: 'ERR_SLUICE_INVALID_LIMIT' });
  });

  // A promise of another library's (a thenable) was read as an object: `limit` failed with
  // ERR_SLUICE_INVALID_LIMIT and `message` sent `{}`, where `key`, `cost` and `policies` await it.
  // biome-ignore lint/suspicious/noThenProperty: a thenable is what the test hands over.
  const thenable = (value: unknown) => ({ then: (resolve: (v: unknown) => void) => resolve(value) });
  it('awaits a thenable from limit and message functions as from an async one', async () => {
    const limiter = createHttpLimiter(
      { limit: () => thenable(1) as never, window: '1m', message: () => thenable({ slow: 'down' }) as never },
      binding,
    );
    expect((await limiter.handle(from('1.2.3.4'), {})).action).toBe('next');
    const refused = await limiter.handle(from('1.2.3.4'), {});
    expect(refused).toMatchObject({ action: 'limited', refusal: { body: '{"slow":"down"}' } });
  });

  // Sent as `{}` (a Map) or a quoted date, where a fixed message of the kind fails at start-up.
  it.each([
    ['a Map', new Map([['slow', 'down']])],
    ['a Date', new Date(0)],
  ])('fails the refusal when a message function returns %s, which JSON would not write as it is', async (_, body) => {
    const limiter = createHttpLimiter({ limit: 1, window: '1m', message: () => body as never }, binding);
    await limiter.handle(from('1.2.3.4'), {});
    // Thrown at once by a message made at once, as an adapter's call of `handle` takes it.
    await expect(async () => limiter.handle(from('1.2.3.4'), {})).rejects.toMatchObject({
      code: 'ERR_SLUICE_INVALID_MESSAGE',
    });
  });

  it('rejects policies JSON cannot write (a BigInt) with a code, not a bare TypeError', async () => {
    const limiter = createHttpLimiter({ policies: () => [{ limit: 10n, window: '1m' }] as never }, binding);
    await expect(limiter.handle(from('1.2.3.4'), {})).rejects.toMatchObject({ code: 'ERR_SLUICE_INVALID_POLICIES' });
  });

  // `undefined` alone means the default: a `null` was read as it, the ban's window as its
  // duration and the rules' domain as their only one.
  it('refuses null for a ban window or a rules domain, where left out takes the default', () => {
    const ban = { after: 2, duration: '1h', window: null };
    expect(() => createHttpLimiter({ limit: 1, window: '1m', ban } as never, binding)).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_DURATION', message: expect.stringContaining('ban.window') }),
    );
    const rules = parseRules(
      'domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, requests_per_unit: 1 }\n',
    );
    expect(() => createHttpLimiter({ rules, domain: null } as never, binding)).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_OPTION', message: expect.stringContaining('domain') }),
    );
  });

  // Refused as unknown options: `rules: undefined` beside policies (the mode not chosen), and
  // in rules mode options it does not take, which exist.
  it('takes rules options left undefined beside policies, and names what rules mode does not take', () => {
    expect(() =>
      createHttpLimiter({ limit: 1, window: '1m', rules: undefined, domain: undefined } as never, binding),
    ).not.toThrow();
    const rules = parseRules(
      'domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, requests_per_unit: 1 }\n',
    );
    expect(() => createHttpLimiter({ rules, ban: { after: 1, duration: '1h' } } as never, binding)).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_CONFLICTING_OPTIONS', message: expect.stringContaining('`ban`') }),
    );
  });

  // Refused as unknown: a configuration spread (`{ rules, limit: cfg.limit, key: cfg.key }`)
  // failed with "Unknown option `key`", where the same with policies takes `rules: undefined`.
  it('takes the policy options left undefined beside rules, as it takes rules options beside policies', () => {
    const rules = parseRules(
      'domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, requests_per_unit: 1 }\n',
    );
    const unset = { limit: undefined, window: undefined, key: undefined, ban: undefined, onExceeded: undefined };
    expect(() => createHttpLimiter({ rules, ...unset } as never, binding)).not.toThrow();
    expect(() => createHttpLimiter({ rules, typo: undefined } as never, binding)).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_UNKNOWN_OPTION' }),
    );
  });

  // `ban: false` and an empty allowList say "none", which rules mode takes: refused as options
  // it does not take, a Fastify rules route could not turn off a plugin's ban.
  it('takes ban: false, an empty allowList and counting by outcome off beside rules, as none', () => {
    const rules = parseRules(
      'domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, requests_per_unit: 1 }\n',
    );
    const none = { ban: false, allowList: [], skipFailedRequests: false, skipSuccessfulRequests: false };
    expect(() => createHttpLimiter({ rules, ...none } as never, binding)).not.toThrow();
    expect(() => createHttpLimiter({ rules, allowList: ['10.0.0.1'] } as never, binding)).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_CONFLICTING_OPTIONS' }),
    );
  });

  // `'rules' in options` read `rules: undefined` as rules mode, whose queues are not known yet.
  it('refuses maxQueued without a queue when rules is given as undefined', () => {
    expect(() =>
      createHttpLimiter({ limit: 5, window: '1m', maxQueued: 5, rules: undefined } as never, binding),
    ).toThrow(expect.objectContaining({ code: 'ERR_SLUICE_INVALID_QUEUE' }));
  });

  // Both were reported as options the user never wrote: `policies[0].window` of the ban's own
  // limiters, and a `policies` function for a `limit` one.
  it('names the ban, or the limit function, in an error about their figures', async () => {
    expect(() =>
      createHttpLimiter({ limit: 1, window: '1m', ban: { after: 2 ** 49, duration: '1s' } }, binding),
    ).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_OPTION', message: expect.stringContaining('Option `ban` ') }),
    );
    const limiter = createHttpLimiter({ limit: () => 2 ** 40, window: '1d' }, binding);
    await expect(limiter.handle(from('1.2.3.4'), {})).rejects.toMatchObject({
      message: expect.stringContaining('Your `limit` function returned a limit'),
    });
  });

  it('reuses one limiter for equal tiers returned as fresh objects', async () => {
    const options: HttpLimiterOptions<TieredRequest> = {
      policies: () => [{ name: 'tier', limit: 1, window: '1m' }],
      clock: clockAt(0),
    };
    const limiter = createHttpLimiter(options, binding);
    expect((await limiter.handle(from('1.2.3.4'), {})).action).toBe('next');
    expect((await limiter.handle(from('1.2.3.4'), {})).action).toBe('limited');
  });

  it('gives a tier the same namespace whatever order tiers are first seen in, so processes agree', async () => {
    const tiers: Record<string, { limit: number; window: '1m' }[]> = {
      a: [{ limit: 1, window: '1m' }],
      b: [{ limit: 2, window: '1m' }],
    };
    const namespacesFor = async (order: string[]) => {
      const store = recordingStore();
      const limiter = createHttpLimiter({ policies: (req) => tiers[req.tier as string] ?? [], store }, binding);
      for (const tier of order) await limiter.handle(from('1.2.3.4', tier), {});
      return Object.fromEntries(order.map((tier, i) => [tier, store.namespaces[i]]));
    };
    const first = await namespacesFor(['a', 'b']);
    expect(await namespacesFor(['b', 'a'])).toEqual(first);
    expect(first.a).not.toBe(first.b);
  });

  it('keeps counting a tier after its limiter object was dropped from the cache', async () => {
    const limiter = createHttpLimiter<TieredRequest, Record<string, string>>(
      { policies: (req) => [{ limit: 1 + Number(req.tier), window: '1m' }], clock: clockAt(0) },
      binding,
    );
    await limiter.handle(from('1.2.3.4', '0'), {});
    for (let tier = 1; tier <= MAX_TIER_LIMITERS; tier++) await limiter.handle(from('9.9.9.9', String(tier)), {});
    expect((await limiter.handle(from('1.2.3.4', '0'), {})).action).toBe('limited');
  });

  it('middleware given no store count apart, as with a store each, even with the same policies', async () => {
    // Regression: on one shared store the second would be ERR_SLUICE_NAMESPACE_TAKEN.
    const options = { limit: 1, window: '1m', clock: clockAt(0) } as const;
    const first = createHttpLimiter(options, binding);
    const second = createHttpLimiter(options, binding);
    const login = createHttpLimiter({ ...options, prefix: 'login' }, binding);
    const loginAgain = createHttpLimiter({ ...options, prefix: 'login' }, binding);
    for (const limiter of [first, second, login, loginAgain]) {
      expect((await limiter.handle(from('192.0.2.1'), {})).action).toBe('next');
      expect((await limiter.handle(from('192.0.2.1'), {})).action).toBe('limited');
    }
  });
  // A middleware that failed an option checked after its limiter was made kept the namespace:
  // made again with the mistake mended, it was ERR_SLUICE_NAMESPACE_TAKEN.
  it.each([
    ['skipFailedRequests', { skipFailedRequests: 'yes' }],
    ['allowList', { allowList: [42] }],
    ['ban', { ban: { after: -1, duration: '1m' } }],
    ['onLimited', { onLimited: 'no' }],
  ])('gives the namespace back when %s fails at construction', (_, mistake) => {
    const store = createMemoryStore();
    const options = { limit: 1, window: '1m', store } as const;
    const tiered = { policies: () => [{ limit: 1, window: '1m' as const }], store };
    expect(() => createHttpLimiter({ ...options, ...mistake } as never, binding)).toThrow(SluiceError);
    expect(() => createHttpLimiter({ ...tiered, ...mistake } as never, binding)).toThrow(SluiceError);
    expect(() => createHttpLimiter(options, binding)).not.toThrow();
    expect(() => createHttpLimiter(tiered, binding)).not.toThrow();
    // Still claimed by the middleware that was made.
    expect(() => createHttpLimiter(options, binding)).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_NAMESPACE_TAKEN' }),
    );
  });

  it('gives its namespace back on release, to a middleware made after it', () => {
    const store = createMemoryStore();
    const options = { limit: 1, window: '1m', store } as const;
    const first = createHttpLimiter(options, binding);
    first.release();
    const second = createHttpLimiter(options, binding);
    expect(() => createHttpLimiter(options, binding)).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_NAMESPACE_TAKEN' }),
    );
    second.release();
    // Once only: a second release gives back nothing another limiter holds.
    const third = createHttpLimiter(options, binding);
    first.release();
    expect(() => createHttpLimiter(options, binding)).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_NAMESPACE_TAKEN' }),
    );
    third.release();
  });
});
