import { createLimiter, createMemoryStore, DEFAULT_MAX_KEYS, type StoreRequest, toPolicy } from '@sluice/core';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { manualClock } from '../../helpers/clock.js';

const START = 1_700_000_000_000;
const policy = toPolicy({ limit: 1_000, window: '1h', algorithm: 'fixed-window' }, 'policy');
const request = (key: string, cost = 1, now = START): StoreRequest => ({
  namespace: 'ns',
  key,
  policies: [policy],
  capacities: [policy.capacity],
  cost,
  now,
});

describe('memory store bounds', () => {
  it('a flood of 1,000,000 distinct keys leaves exactly maxKeys entries', () => {
    const store = createMemoryStore({ maxKeys: 5_000 });
    for (let i = 0; i < 1_000_000; i++) store.consumeSync(request(`flood-${i}`));
    expect(store.size).toBe(5_000);
  });

  it('the default bound is 100,000 keys', async () => {
    const store = createMemoryStore();
    for (let i = 0; i < DEFAULT_MAX_KEYS + 10; i++) store.consumeSync(request(`k${i}`));
    expect(store.size).toBe(DEFAULT_MAX_KEYS);
  });

  it('a key used in every run of maxKeys − 1 others is never evicted by a flood', () => {
    const maxKeys = 100;
    const store = createMemoryStore({ maxKeys });
    let used = 0;
    for (let i = 0; i < 20_000; i++) {
      if (i % (maxKeys - 1) === 0) {
        used++;
        // Had the hot key been evicted, it would start again from a full quota.
        expect(store.consumeSync(request('hot')).outcomes[0]?.remaining).toBe(1_000 - used);
      }
      store.consumeSync(request(`flood-${i}`));
    }
  });

  it('eviction is least recently used: a key goes once maxKeys others were used after it', () => {
    const store = createMemoryStore({ maxKeys: 3 });
    store.consumeSync(request('a', 10));
    store.consumeSync(request('b'));
    store.consumeSync(request('c'));
    // A peek counts as a use.
    store.consumeSync(request('a', 0));
    store.consumeSync(request('d'));
    expect(store.consumeSync(request('a', 0)).outcomes[0]?.remaining).toBe(990);
    expect(store.consumeSync(request('b', 0)).outcomes[0]?.remaining).toBe(1_000);
  });

  it('counts evictions: one per new key that finds the store full, none for keys it holds', () => {
    const store = createMemoryStore({ maxKeys: 1_000 });
    for (let i = 0; i < 1_000; i++) store.consumeSync(request(`k${i}`));
    expect(store.evictions).toBe(0);
    for (let i = 0; i < 1_000; i++) store.consumeSync(request(`k${i}`));
    expect(store.evictions).toBe(0);
    for (let i = 0; i < 250; i++) store.consumeSync(request(`new-${i}`));
    expect([store.size, store.evictions]).toEqual([1_000, 250]);
    // A peek of an unknown key stores nothing, so it evicts nothing.
    store.consumeSync(request('never-seen', 0));
    expect(store.evictions).toBe(250);
  });

  it('limiters sharing the store share its bound: one entry per client key, whatever the limiters', async () => {
    const store = createMemoryStore({ maxKeys: 10 });
    const a = createLimiter({ limit: 2, window: '1m', store });
    const b = createLimiter({ limit: 3, window: '1h', algorithm: 'gcra', store });
    await a.consume('client');
    await b.consume('client');
    expect(store.size).toBe(1);
    await a.reset('client');
    expect((await a.peek('client')).remaining).toBe(2);
    expect((await b.peek('client')).remaining).toBe(2);
  });
});

describe('memory store expiry is lazy', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('runs no timer, per key or otherwise', async () => {
    vi.useFakeTimers();
    const clock = manualClock(START);
    const limiter = createLimiter({ limit: 5, window: '1s', clock, store: createMemoryStore({ maxKeys: 100 }) });
    for (let i = 0; i < 50; i++) await limiter.consume(`k${i % 7}`);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('a state past its reset time reads as fresh, and a peek keeps it for a clock that steps back', async () => {
    const clock = manualClock(START);
    const store = createMemoryStore({ maxKeys: 100 });
    const limiter = createLimiter({ limit: 3, window: '1s', algorithm: 'sliding-window-log', clock, store });
    for (let i = 0; i < 3; i++) await limiter.consume('k');
    const refused = await limiter.consume('k');
    expect(refused.allowed).toBe(false);
    clock.advance(refused.resetAfterMs - 1);
    expect(await limiter.peek('k')).toMatchObject({ remaining: 0 });
    expect(store.size).toBe(1);
    clock.advance(1);
    expect(await limiter.peek('k')).toMatchObject({ remaining: 3, resetAfterMs: 0 });
    expect(store.size).toBe(1);
    clock.advance(-1);
    expect(await limiter.peek('k')).toMatchObject({ remaining: 0 });
  });

  it('a refund that brings a state back to fresh drops it', async () => {
    const store = createMemoryStore({ maxKeys: 100 });
    const limiter = createLimiter({ limit: 3, window: '1m', algorithm: 'fixed-window', clock: () => START, store });
    await limiter.consume('k', { cost: 2 });
    await limiter.refund('k', 2);
    expect(store.size).toBe(0);
    expect((await limiter.peek('k')).remaining).toBe(3);
  });
});

describe('memory store options', () => {
  it.each([0, -1, 1.5, Number.NaN, Infinity, '10', 2 ** 30 + 1])(
    'maxKeys %s throws ERR_SLUICE_INVALID_MAX_KEYS',
    (maxKeys) => {
      expect(() => createMemoryStore({ maxKeys: maxKeys as number })).toThrow(
        expect.objectContaining({
          code: 'ERR_SLUICE_INVALID_MAX_KEYS',
          message: expect.stringContaining(String(maxKeys)),
        }),
      );
    },
  );

  // Regression: `null` threw a TypeError from `Object.keys`, with no code.
  it.each([null, 5, 'big'])('options that are no object (%s) throw ERR_SLUICE_INVALID_OPTION', (options) => {
    expect(() => createMemoryStore(options as never)).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_OPTION' }),
    );
  });

  it('an unknown option throws ERR_SLUICE_UNKNOWN_OPTION naming it', () => {
    expect(() => createMemoryStore({ max: 10 } as never)).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_UNKNOWN_OPTION', message: expect.stringContaining('`max`') }),
    );
  });
});
