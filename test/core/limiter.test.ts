import { runInNewContext } from 'node:vm';
import { createLimiter, type Limiter, type LimiterOptions, type StoreRequest, storeKey } from '@sluice/core';
import { createMemoryStore } from '@sluice/memory';
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { manualClock } from '../helpers/clock.js';
import { START, VARIANTS } from './support/meter.js';

const exhaust = async (limiter: Limiter, key: string) => {
  let passed = 0;
  while ((await limiter.consume(key)).allowed) passed++;
  return passed;
};

describe('namespaces on a shared store', () => {
  it('two limiters with the same policies and no prefix on one store are an error naming prefix', async () => {
    const store = createMemoryStore({ maxKeys: 10 });
    createLimiter({ limit: 3, window: '1m', store });
    expect(() => createLimiter({ limit: 3, window: '1m', store })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_NAMESPACE_TAKEN', message: expect.stringContaining('`prefix`') }),
    );
    const global = createLimiter({ limit: 3, window: '1m', store, prefix: 'global' });
    const route = createLimiter({ limit: 3, window: '1m', store, prefix: 'route' });
    expect(await exhaust(global, 'ip')).toBe(3);
    expect(await exhaust(route, 'ip')).toBe(3);
  });

  // A wrapper spread from the store was another backing: the second limiter took the first's
  // namespace and refused a client it never charged.
  it('a store wrapped by spreading it is the same table: the second limiter is still an error', async () => {
    const store = createMemoryStore({ maxKeys: 10 });
    const wrapped = { ...store, consume: (request: StoreRequest) => store.consume(request) };
    createLimiter({ limit: 3, window: '1m', store });
    expect(() => createLimiter({ limit: 3, window: '1m', store: wrapped })).toThrow(
      expect.objectContaining({
        code: 'ERR_SLUICE_NAMESPACE_TAKEN',
        message: expect.stringContaining('on this memory store;'),
      }),
    );
  });

  it('a derived namespace never takes an explicit prefix already claimed, and vice versa', async () => {
    const store = createMemoryStore({ maxKeys: 10 });
    const derived = createLimiter({ limit: 3, window: '1m', store });
    expect(() => createLimiter({ limit: 4, window: '1m', store, prefix: derived.namespace })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_PREFIX' }),
    );
    const explicit = createLimiter({ limit: 5, window: '1m', store, prefix: 'api' });
    expect(explicit.namespace).toBe('api');
  });

  it('the same explicit prefix shares counts on purpose, also across versions of the policies', async () => {
    const store = createMemoryStore({ maxKeys: 10 });
    const a = createLimiter({ limit: 3, window: '1m', store, prefix: 'shared' });
    const b = createLimiter({ limit: 3, window: '1m', store, prefix: 'shared' });
    await a.consume('ip');
    expect((await b.peek('ip')).remaining).toBe(2);
    // A new version (a rules reload): the client keeps what it has spent.
    const next = createLimiter({ limit: 4, window: '1m', store, prefix: 'shared' });
    expect((await next.peek('ip')).remaining).toBe(3);
  });
});

describe('client keys are untrusted input', () => {
  // Any UTF-16 code unit (lone surrogates included), with the interesting ASCII ones often.
  const unit = fc.oneof(
    fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)),
    fc.constantFrom(...'aZ09._:/@+=-{}|#\n\r '),
  );
  const keyArb = fc.string({ unit, maxLength: 200 });
  const tricky = ['', 'a', 'a{b}', '{a}', 'a\nb', 'a\r\nb', 'a|b', 'ns|a', '#', 'é', '\u0000', ' a', 'a'.repeat(129)];

  it('storeKey keeps short safe keys, and turns everything else into a bounded safe form', () => {
    fc.assert(
      fc.property(fc.oneof(keyArb, fc.constantFrom(...tricky)), (key) => {
        const stored = storeKey(key);
        expect(stored).toMatch(/^[#A-Za-z0-9._:/@+=-]{0,128}$/);
        expect(stored).not.toMatch(/[{}\n|]/);
        if (/^[A-Za-z0-9._:/@+=-]{0,128}$/.test(key)) expect(stored).toBe(key);
      }),
    );
    expect(storeKey('x'.repeat(1_000_000)).length).toBeLessThanOrEqual(128);
  });

  it('distinct keys never share a stored form, even a key equal to another key’s stored form', () => {
    fc.assert(
      fc.property(keyArb, keyArb, (a, b) => {
        fc.pre(a !== b);
        expect(storeKey(a)).not.toBe(storeKey(b));
      }),
      { numRuns: 500 },
    );
    const hashed = storeKey('a{b}');
    expect(storeKey(hashed)).not.toBe(hashed);
  });

  it('every tricky key gets its own count on one limiter', async () => {
    const limiter = createLimiter({ limit: 1, window: '1m', store: createMemoryStore({ maxKeys: 100 }) });
    const keys = [...tricky, storeKey('a{b}'), 'x'.repeat(100_000)];
    for (const key of keys) expect((await limiter.consume(key)).allowed).toBe(true);
    for (const key of keys) expect((await limiter.consume(key)).allowed).toBe(false);
  });
});

describe('peek, reset and refund', () => {
  it.each(VARIANTS)('%s: peek charges nothing and predicts whether one more request passes', async (variant) => {
    const [algorithm, mode] = variant.split(' ') as [LimiterOptions['algorithm'], string | undefined];
    const options = { limit: 4, window: '1s', algorithm } as LimiterOptions;
    if (mode === 'interval') Object.assign(options, { refillAmount: 2, refillInterval: '500ms' });
    const clock = manualClock(START);
    const limiter = createLimiter({ ...options, clock, store: createMemoryStore({ maxKeys: 10 }) });
    for (let i = 0; i < 200; i++) {
      clock.advance((i * 37) % 300);
      const before = await limiter.peek('k');
      expect(await limiter.peek('k')).toEqual(before);
      if (mode === 'queue') continue;
      const after = await limiter.consume('k');
      expect(after.allowed).toBe(before.allowed);
    }
  });

  it('peek in soft mode says a request in the overage would pass', async () => {
    const limiter = createLimiter({ limit: 2, window: '1m', throttle: { mode: 'soft', overagePercent: 50 } });
    await limiter.consume('k');
    await limiter.consume('k');
    const peek = await limiter.peek('k');
    expect(peek).toMatchObject({ allowed: true, remaining: 0 });
    expect((await limiter.consume('k')).overLimit).toBe('soft');
    expect((await limiter.peek('k')).allowed).toBe(false);
  });

  // A cost-0 ask over a state already past its capacity came back refused with a wait, and
  // peek passed it on: 3000 ms for a bucket the clock stood 3 s behind, 1000 ms once an elastic
  // capacity fell. A look has no wait (README): resetAfterMs says when the quota is back.
  it('peek has no wait, even over a capacity that fell or a clock behind a bucket', async () => {
    const clock = manualClock(5_000);
    const bucket = createLimiter({ limit: 1, window: 1_000, algorithm: 'token-bucket', clock });
    await bucket.consume('k');
    clock.set(2_000);
    const behind = await bucket.peek('k');
    expect(behind).toMatchObject({ allowed: false, retryAfterMs: 0 });
    expect(behind.policies.map((p) => p.retryAfterMs)).toEqual([0]);
    let load = 0;
    const elastic = createLimiter({
      limit: 10,
      window: '1m',
      throttle: { mode: 'elastic', maxOveragePercent: 100, load: () => load },
      clock,
    });
    while ((await elastic.consume('k')).allowed) {}
    load = 1;
    const fallen = await elastic.peek('k');
    expect(fallen).toMatchObject({ allowed: false, retryAfterMs: 0 });
    expect(fallen.resetAfterMs).toBeGreaterThan(0);
  });

  it('a refused peek says which policy refuses (every policy said allowed)', async () => {
    const limiter = createLimiter({
      policies: [
        { name: 'minute', limit: 1, window: '1m' },
        { name: 'hour', limit: 5, window: '1h' },
      ],
      clock: () => START,
    });
    await limiter.consume('k');
    const peek = await limiter.peek('k');
    expect(peek.allowed).toBe(false);
    expect(peek.policies.map((p) => [p.name, p.allowed])).toEqual([
      ['minute', false],
      ['hour', true],
    ]);
  });

  it('reset restores the full quota of that key only', async () => {
    const store = createMemoryStore({ maxKeys: 10 });
    const limiter = createLimiter({
      policies: [
        { limit: 2, window: '1m' },
        { limit: 5, window: '1h' },
      ],
      store,
    });
    await exhaust(limiter, 'a');
    await exhaust(limiter, 'b');
    await limiter.reset('a');
    expect(await exhaust(limiter, 'a')).toBe(2);
    expect(await exhaust(limiter, 'b')).toBe(0);
  });

  it('refund gives back what was charged, in soft mode too', async () => {
    for (const algorithm of ['token-bucket', 'gcra', 'fixed-window', 'sliding-window-log'] as const) {
      const clock = manualClock(START);
      const limiter = createLimiter({
        limit: 10,
        window: '1m',
        algorithm,
        clock,
        throttle: { mode: 'soft', overagePercent: 50 },
      });
      await limiter.consume('k', { cost: 4 });
      await limiter.refund('k', 3);
      expect(await exhaust(limiter, 'k')).toBe(14);
      await limiter.refund('k', 1_000);
      // Never beyond a fresh state.
      expect(await exhaust(limiter, 'k')).toBe(15);
    }
  });

  // An answer dated ahead of the clock (in microseconds, say) stretched the span past the
  // refund, and the log gave back a later request's entry.
  it('a refund whose answer is dated ahead of the clock gives nothing back', async () => {
    const clock = manualClock(START);
    const limiter = createLimiter({ limit: 2, window: '1m', algorithm: 'sliding-window-log', clock });
    await limiter.consume('k');
    clock.advance(100);
    await limiter.consume('k');
    clock.advance(100);
    await limiter.refund('k', 1, { chargedAt: START, answeredAt: START * 1000 });
    expect((await limiter.peek('k')).remaining).toBe(0);
  });

  // A time ahead of the clock, which has stepped back since the charge: taken as a charge made
  // now, a bucket gave back a later request's units, as if nothing had been charged since.
  it('a refund dated ahead of the clock gives nothing back; one dated at it, the whole charge', async () => {
    const clock = manualClock(START);
    const limiter = createLimiter({ limit: 4, window: '1m', algorithm: 'token-bucket', clock });
    await limiter.consume('k', { cost: 3 });
    await limiter.refund('k', 2, { chargedAt: START + 5_000 });
    expect((await limiter.peek('k')).remaining).toBe(1);
    await expect(limiter.refund('k', 0, { chargedAt: START + 5_000 })).rejects.toMatchObject({
      code: 'ERR_SLUICE_INVALID_COST',
    });
    await limiter.refund('k', 3, { chargedAt: START });
    expect((await limiter.peek('k')).remaining).toBe(4);
  });
});

describe('bad input at call time', () => {
  const logger = { warn: vi.fn() };
  const limiter = createLimiter({ limit: 5, window: '1m', logger });

  it.each([0, -1, 1.5, Number.NaN, Infinity, '2'])('cost %s rejects with ERR_SLUICE_INVALID_COST', async (cost) => {
    await expect(limiter.consume('k', { cost: cost as number })).rejects.toMatchObject({
      code: 'ERR_SLUICE_INVALID_COST',
    });
    await expect(limiter.refund('k', cost as number)).rejects.toMatchObject({ code: 'ERR_SLUICE_INVALID_COST' });
  });

  it("refund's options: a chargedAt that is no time, options that are no object, or a misspelt option reject", async () => {
    const refund = limiter.refund as (key: string, cost: number, options: unknown) => Promise<void>;
    for (const chargedAt of [Number.NaN, Infinity, '5', null]) {
      await expect(refund('r', 1, { chargedAt })).rejects.toMatchObject({ code: 'ERR_SLUICE_INVALID_OPTION' });
    }
    for (const options of [5, null, 'now', [], [5], new Map([['chargedAt', 5]]), new Date(5)]) {
      await expect(refund('r', 1, options)).rejects.toMatchObject({ code: 'ERR_SLUICE_INVALID_OPTION' });
    }
    await expect(refund('r', 1, { chargeAt: 5 })).rejects.toMatchObject({ code: 'ERR_SLUICE_UNKNOWN_OPTION' });
    // The span the two close: an answer time alone would date nothing.
    await expect(refund('r', 1, { answeredAt: 5 })).rejects.toMatchObject({ code: 'ERR_SLUICE_INVALID_OPTION' });
    await expect(refund('r', 1, { chargedAt: 5, answeredAt: '6' })).rejects.toMatchObject({
      code: 'ERR_SLUICE_INVALID_OPTION',
    });
    // An answer before its ask, or a time no clock reads, would date no charge.
    for (const options of [{ chargedAt: 6, answeredAt: 5 }, { chargedAt: -1e300 }]) {
      await expect(refund('r', 1, options)).rejects.toMatchObject({ code: 'ERR_SLUICE_INVALID_OPTION' });
    }
  });

  it('a null cost, options that are not a plain object, or a misspelt option reject, charging nothing', async () => {
    const consume = limiter.consume as (key: string, options: unknown) => Promise<unknown>;
    await expect(consume('c', { cost: null })).rejects.toMatchObject({ code: 'ERR_SLUICE_INVALID_COST' });
    // An array, a Map or a Date names no option, and was read as a cost of 1.
    for (const options of [5, null, 'cost', [], [5], new Map([['cost', 5]]), new Date(5)]) {
      await expect(consume('c', options)).rejects.toMatchObject({
        code: 'ERR_SLUICE_INVALID_OPTION',
        message: expect.stringContaining('an object such as `{ cost: 2 }`'),
      });
    }
    // Options from another realm, of a class of the app's own, or on a prototype pass.
    class Charge {
      cost = 1;
    }
    const elsewhere = runInNewContext('({ cost: 1 })') as unknown;
    for (const options of [elsewhere, new Charge(), Object.create({ cost: 1 })])
      expect(await consume('d', options)).toMatchObject({ allowed: true });
    // A misspelling, and rate-limiter-flexible's name for the cost.
    for (const name of ['costs', 'points']) {
      await expect(consume('c', { [name]: 5 })).rejects.toMatchObject({
        code: 'ERR_SLUICE_UNKNOWN_OPTION',
        message: `[sluice] Unknown option \`${name}\` of consume; its only option is \`cost\`.`,
      });
    }
    // An absent cost is 1, whether the options are left out or leave it out.
    expect((await consume('c', { cost: undefined })) as { remaining: number }).toMatchObject({ remaining: 4 });
    expect(await limiter.consume('c')).toMatchObject({ remaining: 3 });
  });

  it.each([42, undefined, null, {}, Symbol('k')])(
    'key %s rejects with ERR_SLUICE_INVALID_KEY, not as a store failure',
    async (key) => {
      for (const call of [
        () => limiter.consume(key as never),
        () => limiter.peek(key as never),
        () => limiter.reset(key as never),
        () => limiter.refund(key as never, 1),
      ]) {
        await expect(call()).rejects.toMatchObject({ code: 'ERR_SLUICE_INVALID_KEY' });
      }
      expect(logger.warn).not.toHaveBeenCalled();
    },
  );

  it('nothing was charged by the bad calls', async () => {
    expect((await limiter.peek('k')).remaining).toBe(5);
  });
});
