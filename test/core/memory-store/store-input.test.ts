import { createMemoryStore, type StoreRequest, toPolicy } from '@sluice/core';
import { describe, expect, it } from 'vitest';

// Called directly (a store that wraps it, a test harness), the memory store used to take any
// cost: -10 wrote a negative count that minted quota, 0.5 reported 2.5 remaining, and a refund
// of NaN left the client refused for good with `remaining: NaN`. The Redis store refuses them.

const START = 1_700_000_000_000;
const policies = [
  toPolicy({ name: 'minute', limit: 3, window: '1m', algorithm: 'fixed-window' }, 'minute'),
  toPolicy({ name: 'hour', limit: 3, window: '1h', algorithm: 'gcra' }, 'hour'),
];
const one = [toPolicy({ limit: 3, window: '1m', algorithm: 'sliding-window-log' }, 'options')];
const request = (cost: number, set = policies, now = START): StoreRequest => ({
  namespace: 'ns',
  key: 'k',
  policies: set,
  capacities: set.map((p) => p.capacity),
  cost,
  now,
});
const badCost = expect.objectContaining({ code: 'ERR_SLUICE_INVALID_COST' });

describe('the memory store refuses a cost that is not a whole number of 0 or more', () => {
  it.each([-10, -1, 0.5, 1.5, Number.NaN, Number.POSITIVE_INFINITY, '1' as unknown as number, undefined])(
    'cost %s: ERR_SLUICE_INVALID_COST from every method, and nothing changes',
    async (cost) => {
      const store = createMemoryStore();
      store.consumeSync(request(1));
      store.consumeSync(request(1, one));
      const before = [store.consumeSync(request(0)), store.consumeSync(request(0, one))];
      expect(() => store.consumeSync(request(cost as number))).toThrow(badCost);
      expect(() => store.consumeOneSync(request(cost as number, one))).toThrow(badCost);
      await expect(store.consume(request(cost as number))).rejects.toEqual(badCost);
      await expect(store.refund(request(cost as number))).rejects.toEqual(badCost);
      await expect(store.refund(request(cost as number, one))).rejects.toEqual(badCost);
      expect([store.consumeSync(request(0)), store.consumeSync(request(0, one))]).toEqual(before);
    },
  );

  // A negative age would give back a later request's units, a NaN nothing, without a word.
  it.each([-1, 0.5, Number.NaN, '5' as unknown as number])(
    "a refund's chargeAgeMs of %s: ERR_SLUICE_INVALID_OPTION, and nothing changes",
    async (chargeAgeMs) => {
      const store = createMemoryStore();
      store.consumeSync(request(2));
      await expect(store.refund({ ...request(1), chargeAgeMs })).rejects.toMatchObject({
        code: 'ERR_SLUICE_INVALID_OPTION',
      });
      expect(store.consumeSync(request(0)).outcomes.map((o) => o.remaining)).toEqual([1, 1]);
    },
  );

  it('a cost of 0 peeks and a refund of 0 gives nothing back', async () => {
    const store = createMemoryStore();
    store.consumeSync(request(2));
    await store.refund(request(0));
    expect(store.consumeSync(request(0)).outcomes.map((o) => o.remaining)).toEqual([1, 1]);
  });
});

describe('consume and refund reject, never throw, as promises should', () => {
  it.each(['consume', 'refund'] as const)('%s with a bad clock reading', async (method) => {
    const store = createMemoryStore();
    let settled: Promise<unknown> | undefined;
    expect(() => {
      settled = store[method](request(1, policies, Number.NaN));
    }).not.toThrow();
    await expect(settled).rejects.toEqual(expect.objectContaining({ code: 'ERR_SLUICE_INVALID_CLOCK' }));
  });
});

describe('a refused value is named as what it is', () => {
  // `maxKeys: '10'` was reported as "received 10", hiding that it was text.
  it.each([
    ['10', '"10"'],
    [10n, '10n'],
    [{}, 'an object'],
  ])('maxKeys %s is reported as %s', (maxKeys, shown) => {
    expect(() => createMemoryStore({ maxKeys: maxKeys as number })).toThrow(
      expect.objectContaining({
        code: 'ERR_SLUICE_INVALID_MAX_KEYS',
        message: expect.stringContaining(`received ${shown}.`),
      }),
    );
  });

  it('a cost and a clock reading of text', () => {
    const store = createMemoryStore();
    expect(() => store.consumeSync(request('2' as unknown as number))).toThrow(/received "2"\./);
    expect(() => store.consumeSync(request(1, policies, '5' as unknown as number))).toThrow(/received "5"\./);
  });
});
