import { algorithmNames, createLimiter, createMemoryStore, decide, type State, type StoreRequest } from '@sluice/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { policySet } from '../../conformance/arbitraries.js';
import { manualClock } from '../../helpers/clock.js';

// A peek that found a state past its reset time used to drop it. A clock that then stepped
// back (NTP, two servers' readings) read a fresh quota where the reference, and the Redis
// store, still count what was spent: a fixed window of 3 admitted 6 in one window.

const START = 1_700_000_000_000;

describe('a peek past the reset time keeps the state for a clock that steps back', () => {
  it('a fixed window admits no more than its limit in one window', async () => {
    const clock = manualClock(START + 999);
    const store = createMemoryStore({ maxKeys: 10 });
    const limiter = createLimiter({ limit: 3, window: '1s', algorithm: 'fixed-window', clock, store });
    for (let i = 0; i < 3; i++) expect((await limiter.consume('k')).allowed).toBe(true);
    clock.set(START + 1_001);
    expect((await limiter.peek('k')).remaining).toBe(3);
    clock.set(START + 998);
    expect(await limiter.consume('k')).toMatchObject({ allowed: false, remaining: 0 });
  });

  it('on a client with several policies, and beside another limiter', async () => {
    const clock = manualClock(START + 999);
    const store = createMemoryStore({ maxKeys: 10 });
    const policies = [
      { name: 'second', limit: 2, window: 1_000, algorithm: 'fixed-window' as const },
      { name: 'burst', limit: 2, window: 1_000, algorithm: 'gcra' as const },
    ];
    const limiter = createLimiter({ policies, clock, store });
    const other = createLimiter({ limit: 5, window: '1h', clock, store, prefix: 'other' });
    await other.consume('k');
    for (let i = 0; i < 2; i++) expect((await limiter.consume('k')).allowed).toBe(true);
    clock.set(START + 2_000);
    expect((await limiter.peek('k')).remaining).toBe(2);
    clock.set(START + 998);
    expect((await limiter.consume('k')).allowed).toBe(false);
  });

  it('decides as the reference does on any trace of consumes and peeks, the clock stepping back', () => {
    const stepArb = fc.record({
      cost: fc.oneof({ weight: 3, arbitrary: fc.integer({ min: 1, max: 4 }) }, fc.constant(0)),
      advance: fc.oneof(fc.integer({ min: 0, max: 5_000 }), fc.integer({ min: -5_000, max: -1 })),
    });
    fc.assert(
      fc.property(
        policySet(fc.constantFrom(...algorithmNames), 3, fc.integer({ min: 1, max: 2_000 })),
        fc.array(stepArb, { maxLength: 40 }),
        ({ policies, capacities }, steps) => {
          const store = createMemoryStore({ maxKeys: 10 });
          let states: readonly (State | undefined)[] = [];
          let now = START;
          for (const { cost, advance } of steps) {
            now += advance;
            const request: StoreRequest = { namespace: 'n', key: 'k', policies, capacities, cost, now };
            const reference = decide(states, policies, capacities, cost, now);
            if (reference.next !== undefined) states = reference.next;
            expect(store.consumeSync(request)).toEqual({
              allowed: reference.allowed,
              now,
              outcomes: reference.outcomes,
            });
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it.each(algorithmNames)('%s, on the one-policy path', async (algorithm) => {
    const clock = manualClock(START + 500);
    const limiter = createLimiter({ limit: 2, window: 1_000, algorithm, clock, store: createMemoryStore() });
    const { resetAfterMs } = await limiter.consume('k', { cost: 2 });
    clock.advance(resetAfterMs + 1);
    expect((await limiter.peek('k')).remaining).toBe(2);
    // 10 ms after the charge, none of the two units has come back.
    clock.set(START + 510);
    expect(await limiter.consume('k')).toMatchObject({ allowed: false, remaining: 0 });
  });
});
