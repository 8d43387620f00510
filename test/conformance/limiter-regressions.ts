import { randomUUID } from 'node:crypto';
import { type AlgorithmName, algorithmNames, createLimiter, type Limiter, type RateLimitStore } from '@sluice/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { manualClock } from '../helpers/clock.js';

const START_MS = 1_700_000_000_000;
const MINUTE = 60_000;

/** A namespace no other test of the run uses. */
const freshPrefix = () => `t-${randomUUID().slice(0, 13)}`;

/**
 * A slow store call must fail the test, never count as a pass: on a loaded machine the
 * default 100 ms timeout with `onStoreError: 'allow'` would admit the request and read as
 * an over-admission.
 */
const strict = { onStoreError: 'throw', storeTimeoutMs: 10_000 } as const;

/**
 * Defects found by hostile testing, each reproduced through a limiter on every store: declare
 * it inside a store's `describe`, next to `storeConformance`.
 */
export function limiterRegressions(store: () => RateLimitStore) {
  const pairs = algorithmNames.flatMap((a) => algorithmNames.map((b) => [a, b] as const));

  it.each(pairs)(
    'rolling deploy %s → %s, limit 5 → 10 under one prefix: taking turns admits at most 10 (was 40 of 40)',
    async (from, to) => {
      const shared = { ...strict, store: store(), prefix: freshPrefix(), clock: () => START_MS };
      const old = createLimiter({ ...shared, limit: 5, window: '1m', algorithm: from });
      const next = createLimiter({ ...shared, limit: 10, window: '1m', algorithm: to });
      let admitted = 0;
      for (let i = 0; i < 40; i++) if ((await (i % 2 === 0 ? old : next).consume('k')).allowed) admitted++;
      expect(admitted).toBeGreaterThanOrEqual(5);
      expect(admitted).toBeLessThanOrEqual(10);
    },
  );

  // Regression: on Redis, a bucket's wait for a cost this far above its capacity passes 2^53;
  // the store refused the reply as no decision, and under the default fail policy the request
  // was let through.
  it.each(algorithmNames)(
    '%s: a cost far above the capacity is refused as one that can never pass',
    async (algorithm) => {
      const limiter = createLimiter({
        ...strict,
        store: store(),
        prefix: freshPrefix(),
        clock: () => START_MS,
        limit: 10,
        window: '1s',
        algorithm,
      });
      for (const cost of [2 ** 30, 2 ** 49, Number.MAX_SAFE_INTEGER]) {
        const decision = await limiter.consume('k', { cost });
        expect(decision).toMatchObject({ allowed: false, reason: 'cost-exceeds-limit', remaining: 10 });
        expect(decision.retryAfterMs).toBe(Number.POSITIVE_INFINITY);
        // The policy says so too: it gave a wait of its algorithm's that would never help.
        expect(decision.policies[0]?.retryAfterMs).toBe(Number.POSITIVE_INFINITY);
      }
      expect((await limiter.consume('k')).remaining).toBe(9);
    },
  );

  it('two versions taking turns in any order never admit more than the larger limit (property)', async () => {
    const version = fc.record({
      algorithm: fc.constantFrom(...algorithmNames),
      limit: fc.integer({ min: 1, max: 12 }),
    });
    await fc.assert(
      fc.asyncProperty(
        version,
        version,
        fc.array(fc.boolean(), { minLength: 1, maxLength: 40 }),
        async (a, b, turns) => {
          // The clock stands still, so nothing refills: every admission spends quota for good.
          const shared = {
            ...strict,
            store: store(),
            prefix: freshPrefix(),
            clock: () => START_MS,
            window: '1m' as const,
          };
          const first = createLimiter({ ...shared, ...a });
          const second = createLimiter({ ...shared, ...b });
          let admitted = 0;
          for (const turn of turns) if ((await (turn ? first : second).consume('k')).allowed) admitted++;
          expect(admitted).toBeLessThanOrEqual(Math.max(a.limit, b.limit));
        },
      ),
      { numRuns: 40 },
    );
  });

  it.each(pairs)('a changed algorithm %s → %s never resets a client to a fresh quota', async (from, to) => {
    const shared = { ...strict, store: store(), prefix: freshPrefix(), clock: () => START_MS };
    const policy = (algorithm: AlgorithmName) => [{ name: 'minute', limit: 5, window: '1m' as const, algorithm }];
    const old = createLimiter({ ...shared, policies: policy(from) });
    for (let i = 0; i < 5; i++) expect((await old.consume('k')).allowed).toBe(true);
    const next = createLimiter({ ...shared, policies: policy(to) });
    expect((await next.consume('k')).allowed).toBe(false);
    expect((await old.consume('k')).allowed).toBe(false);
  });

  // Regression: a refusal read from another version's state gave that state's wait as this
  // version's shape would spend it (gcra: 12 minutes for 5 of 5 an hour), though each read
  // converts what the other version's state has spent by then, and it reads as fresh once
  // that has reset. Clients were sent away for nothing, or sent back to be refused again
  // (an old hour's 5 of 5 read by 5 a minute: told 12 s, admitted 12 minutes later), and on
  // Redis the deny cache kept refusing what the store then admitted.
  const windowChanges = [
    ['1m', '1h'],
    ['1h', '1m'],
  ] as const;
  it.each(windowChanges.flatMap(([before, after]) => pairs.map(([from, to]) => [from, before, to, after] as const)))(
    "a refusal read from another version's state %s %s → %s %s says when the client is next admitted",
    async (from, before, to, after) => {
      const clock = manualClock(START_MS);
      const shared = { ...strict, store: store(), prefix: freshPrefix(), clock };
      const policy = (algorithm: AlgorithmName, window: '1m' | '1h') => [{ name: 'p', limit: 5, window, algorithm }];
      const old = createLimiter({ ...shared, policies: policy(from, before) });
      let spent = await old.consume('k');
      for (let i = 1; i < 5; i++) spent = await old.consume('k');
      expect(spent.remaining).toBe(0);
      const next = createLimiter({ ...shared, policies: policy(to, after) });
      clock.advance(1);
      const refused = await next.consume('k');
      expect(refused.allowed).toBe(false);
      const oldResetsIn = spent.resetAfterMs - 1;
      expect(refused.retryAfterMs).toBeGreaterThan(0);
      expect(refused.retryAfterMs).toBeLessThanOrEqual(oldResetsIn);
      expect(refused.policies[0]?.resetAfterMs).toBe(oldResetsIn);
      // Refused until the wait is over, though the refusal may be remembered (Redis's deny
      // cache), and admitted the moment it is.
      clock.set(START_MS + 1 + refused.retryAfterMs - 1);
      expect((await next.consume('k')).allowed).toBe(false);
      clock.set(START_MS + 1 + refused.retryAfterMs);
      expect((await next.consume('k')).allowed).toBe(true);
    },
  );

  // A queue admits past the capacity, so the units a converted state may hold and still be
  // admitted are more than the capacity less the cost: found by searching up from there.
  const queued = ['gcra', 'leaky-bucket'] as const;
  it.each(queued.flatMap((to) => algorithmNames.map((from) => [from, to] as const)))(
    "a refusal read from another version's state %s → %s with a queue says when the client is next admitted",
    async (from, to) => {
      const clock = manualClock(START_MS);
      const shared = { ...strict, store: store(), prefix: freshPrefix(), clock };
      const old = createLimiter({ ...shared, policies: [{ name: 'p', limit: 20, window: '1h', algorithm: from }] });
      for (let i = 0; i < 20; i++) await old.consume('k');
      const next = createLimiter({
        ...shared,
        policies: [{ name: 'p', limit: 5, window: '1m', algorithm: to, queue: { maxDelayMs: '30s' } }],
      });
      clock.advance(1);
      const refused = await next.consume('k', { cost: 2 });
      expect(refused.allowed).toBe(false);
      expect(refused.retryAfterMs).toBeGreaterThan(0);
      clock.set(START_MS + 1 + refused.retryAfterMs - 1);
      expect((await next.consume('k', { cost: 2 })).allowed).toBe(false);
      clock.set(START_MS + 1 + refused.retryAfterMs);
      expect((await next.consume('k', { cost: 2 })).allowed).toBe(true);
    },
  );

  // Regression: a refund on another version's state wrote the state back even when it gave
  // everything back, as of now, where a client's own state back to fresh is dropped: a clock
  // that then stepped back read that fresh gcra state as spent (the memory store).
  it("a refund that gives back everything on another version's state leaves the client fresh, even to a clock that steps back", async () => {
    const clock = manualClock(START_MS);
    const shared = { ...strict, store: store(), prefix: freshPrefix(), clock };
    const policy = (algorithm: AlgorithmName) => [{ name: 'p', limit: 3, window: 3000, algorithm }];
    const old = createLimiter({ ...shared, policies: policy('sliding-window-log') });
    const next = createLimiter({ ...shared, policies: policy('gcra') });
    expect((await old.consume('k', { cost: 3 })).allowed).toBe(true);
    clock.advance(100);
    await next.refund('k', 3);
    clock.set(START_MS - 1000);
    expect(await next.peek('k')).toMatchObject({ allowed: true, remaining: 3, resetAfterMs: 0 });
  });

  // The memory store wrote a policy the refund found fresh (a version's new slot) as of the
  // refund's time, where the reference keeps no state: a clock that then stepped back read
  // it as spent, and a bucket refused what Redis and the reference admit.
  it.each(algorithmNames)(
    "%s: a new version's policy a refund finds fresh stays fresh to a clock that steps back",
    async (algorithm) => {
      const clock = manualClock(START_MS);
      const shared = { ...strict, store: store(), prefix: freshPrefix(), clock };
      const a = { name: 'a', limit: 5, window: 10_000, algorithm: 'fixed-window' as const };
      const v1 = createLimiter({ ...shared, policies: [a] });
      const v2 = createLimiter({ ...shared, policies: [a, { name: 'b', limit: 3, window: 3000, algorithm }] });
      await v1.consume('k', { cost: 2 });
      clock.advance(1000);
      await v2.refund('k', 1);
      clock.set(START_MS + 500);
      const decision = await v2.consume('k', { cost: 3 });
      expect(decision.allowed).toBe(true);
      expect(decision.policies[1]).toMatchObject({ remaining: 0 });
    },
  );

  it('a changed window or limit keeps what was spent; a slot the new version lacks is kept for the old one', async () => {
    const clock = manualClock(START_MS);
    const shared = { ...strict, store: store(), prefix: freshPrefix(), clock };
    const old = createLimiter({
      ...shared,
      policies: [
        { name: 'minute', limit: 5, window: '1m' },
        { name: 'day', limit: 8, window: '1d', algorithm: 'fixed-window' },
      ],
    });
    for (let i = 0; i < 4; i++) await old.consume('k');
    const next = createLimiter({ ...shared, policies: [{ name: 'minute', limit: 10, window: '1h' }] });
    expect((await next.consume('k')).policies[0]?.remaining).toBe(5);
    // Back on the old version: its minute is spent (5 of 5 by now), and its daily count
    // survived the new version's write (4 of 8 left, not a fresh 8).
    const back = await old.consume('k');
    expect(back.allowed).toBe(false);
    expect(back.policies.map((p) => p.remaining)).toEqual([0, 4]);
  });

  // An unnamed policy's id carries its figures (10 a minute is `10-per-1m.…`): a store that
  // kept state per id gave every client a fresh quota when the limit or window changed.
  it('an unnamed policy whose limit and window change keeps what was spent (a store keyed by id reset it)', async () => {
    const shared = { ...strict, store: store(), prefix: freshPrefix(), clock: () => START_MS };
    const old = createLimiter({ ...shared, limit: 10, window: '1m' });
    for (let i = 0; i < 10; i++) expect((await old.consume('k')).allowed).toBe(true);
    const next = createLimiter({ ...shared, limit: 20, window: '1h' });
    expect(next.policies[0]?.id).not.toBe(old.policies[0]?.id);
    expect((await next.consume('k')).remaining).toBe(9);
  });

  it('keys differing only in lone surrogates no longer share one counter', async () => {
    const limiter = createLimiter({
      limit: 1,
      window: '1m',
      ...strict,
      store: store(),
      prefix: freshPrefix(),
      clock: () => START_MS,
    });
    const keys = ['\ud800', '\udbff', '\udc00', '\ufffd', 'a\ud800', 'a\udc00', 'a\ufffd', '\ud800\udc00'];
    for (const key of keys) expect((await limiter.consume(key)).allowed, JSON.stringify(key)).toBe(true);
    for (const key of keys) expect((await limiter.consume(key)).allowed, JSON.stringify(key)).toBe(false);
  });

  it.each(algorithmNames)(
    '%s: a clock step back of one window or more never admits more (fixed-window admitted 3x its limit)',
    async (algorithm: AlgorithmName) => {
      // 50 s into a minute, so +5 s is still the same window.
      const clock = manualClock(START_MS + 30_000);
      const limiter = createLimiter({
        limit: 3,
        window: '1m',
        algorithm,
        ...strict,
        store: store(),
        prefix: freshPrefix(),
        clock,
      });
      const admitted = async (n: number) => {
        let passed = 0;
        for (let i = 0; i < n; i++) if ((await limiter.consume('k')).allowed) passed++;
        return passed;
      };
      expect(await admitted(5)).toBe(3);
      for (const back of [1, 2, 5]) {
        clock.set(START_MS + 30_000 - back * MINUTE);
        expect(await admitted(5), `${back} windows back`).toBe(0);
      }
      // The clock returns to the window already exhausted: still nothing more in it.
      clock.set(START_MS + 35_000);
      expect(await admitted(5)).toBe(0);
    },
  );

  /** A limit of 10 a second of `algorithm` on `clock`, in a namespace of its own. */
  const tenASecond = (algorithm: AlgorithmName, clock: () => number) =>
    createLimiter({ limit: 10, window: '1s', algorithm, ...strict, store: store(), prefix: freshPrefix(), clock });

  // A continuous bucket wrote the earlier time when the clock stepped back, and drained that
  // span again once it was forward: readings alternating 1 s apart (two servers' clocks) let
  // 35 through a limit of 10 a second where gcra let 10.
  it.each(['token-bucket', 'leaky-bucket', 'gcra'] as const)(
    '%s: clock readings alternating 1 s apart admit no more than the limit (a bucket admitted 35 of 10)',
    async (algorithm) => {
      const clock = manualClock(START_MS);
      const limiter = tenASecond(algorithm, clock);
      let admitted = 0;
      for (const at of [2_000, 1_000, 2_000, 1_000, 2_000, 1_000, 2_000]) {
        clock.set(START_MS + at);
        for (let i = 0; i < (at === 2_000 ? 5 : 10); i++) if ((await limiter.consume('k')).allowed) admitted++;
      }
      expect(admitted).toBe(10);
    },
  );

  // Its wait left out the lag: a refusal 500 ms behind the full bucket's time said 100 ms.
  it.each(['token-bucket', 'leaky-bucket'] as const)(
    '%s: a wait after a clock step back counts the lag, and is exact',
    async (algorithm) => {
      const clock = manualClock(START_MS + 2_000);
      const limiter = tenASecond(algorithm, clock);
      for (let i = 0; i < 10; i++) expect((await limiter.consume('k')).allowed).toBe(true);
      clock.set(START_MS + 1_500);
      const refused = await limiter.consume('k');
      expect([refused.allowed, refused.retryAfterMs]).toEqual([false, 600]);
      clock.set(START_MS + 2_099);
      expect((await limiter.consume('k')).allowed).toBe(false);
      clock.set(START_MS + 2_100);
      expect((await limiter.consume('k')).allowed).toBe(true);
    },
  );

  // A refund wrote its state as of the earlier time, with the work not yet drained that far
  // back: 30 hours of a limit of 10^8 an hour passed 2^53, which Redis read as no state and
  // gave the client a fresh quota 30 hours early, where memory refused. Undated, the refund
  // counts its charge as made now, 30 hours before the state's time: the state's charge is a
  // later one, all refilled by then, and nothing is given back.
  it.each(['token-bucket', 'leaky-bucket'] as const)(
    '%s: a refund after the clock stepped back a day and more keeps every store refusing alike',
    async (algorithm) => {
      const clock = manualClock(START_MS);
      const options = { limit: 100_000_000, window: '1h', algorithm } as const;
      const limiter = createLimiter({ ...strict, ...options, store: store(), prefix: freshPrefix(), clock });
      expect((await limiter.consume('k')).allowed).toBe(true);
      clock.set(START_MS - 30 * 60 * MINUTE);
      await limiter.refund('k', 1);
      expect((await limiter.peek('k')).allowed).toBe(false);
      clock.set(START_MS);
      expect((await limiter.peek('k')).remaining).toBe(99_999_999);
    },
  );

  // The log appended a request at the earlier time after a newer entry, out of order: its
  // reset said 1000 ms where the newer entry keeps the quota spent for 1500.
  it('sliding-window-log: a charge behind the newest entry is logged in order, and its reset counts the lag', async () => {
    const clock = manualClock(START_MS + 10_000);
    const limiter = createLimiter({
      limit: 2,
      window: '1s',
      algorithm: 'sliding-window-log',
      ...strict,
      store: store(),
      prefix: freshPrefix(),
      clock,
    });
    expect((await limiter.consume('k')).allowed).toBe(true);
    clock.set(START_MS + 9_500);
    expect(await limiter.consume('k')).toMatchObject({ allowed: true, remaining: 0, resetAfterMs: 1_500 });
    clock.set(START_MS + 10_999);
    expect((await limiter.consume('k')).allowed).toBe(false);
    clock.set(START_MS + 11_000);
    expect((await limiter.peek('k')).remaining).toBe(2);
  });

  /** A one-second sliding window counter of `limit` on a manual clock, charged at `charges` ms after the start. */
  const chargedCounter = async (limit: number, charges: readonly number[]) => {
    const clock = manualClock(START_MS);
    const limiter = createLimiter({
      limit,
      window: '1s',
      algorithm: 'sliding-window-counter',
      ...strict,
      store: store(),
      prefix: freshPrefix(),
      clock,
    });
    for (const at of charges) {
      clock.set(START_MS + at);
      expect((await limiter.consume('k')).allowed).toBe(true);
    }
    return { clock, limiter };
  };

  // A refusal's wait after a clock step back counts the lag, in both of the counter's cases:
  // the request passes within the current window, or only in the next. Waiting exactly
  // `retryAfterMs` passes; a millisecond less does not.
  it.each([
    { passesIn: 'the current window', limit: 3, charges: [9_500, 9_500, 10_600], back: 9_900, wait: 600 },
    { passesIn: 'the next window', limit: 2, charges: [10_500, 10_500], back: 9_800, wait: 1_700 },
  ])('sliding-window-counter: a wait after a clock step back, passing in $passesIn, is exact', async (c) => {
    const { clock, limiter } = await chargedCounter(c.limit, c.charges);
    clock.set(START_MS + c.back);
    const refused = await limiter.consume('k');
    expect(refused.allowed).toBe(false);
    expect(refused.retryAfterMs).toBe(c.wait);
    clock.set(START_MS + c.back + c.wait - 1);
    expect((await limiter.consume('k')).allowed).toBe(false);
    clock.set(START_MS + c.back + c.wait);
    expect((await limiter.consume('k')).allowed).toBe(true);
  });

  // Stepped back, the counter decides as of the start of the window its state was written in,
  // where the previous window still weighs in full: one unit left of 3 passes, and no more.
  it('sliding-window-counter: after a clock step back, what the window of the state has left passes', async () => {
    const { clock, limiter } = await chargedCounter(3, [9_500, 10_200]);
    clock.set(START_MS + 9_900);
    const last = await limiter.consume('k');
    expect(last.allowed).toBe(true);
    expect(last.remaining).toBe(0);
    expect((await limiter.consume('k')).allowed).toBe(false);
  });

  // A refund lands after its charge: a response that ended past a window boundary, a later
  // rule that refused. The counter's previous window still weighs the charge in full at the
  // boundary: dated by its charge, the refund gives back to that window's count; undated, the
  // charge counts as made now, in the new window, whose count never held it.
  it('sliding-window-counter: a refund just past a window boundary gives back a charge dated just before it', async () => {
    const { clock, limiter } = await chargedCounter(3, [900, 950, 999]);
    clock.set(START_MS + 1_000);
    await limiter.refund('k', 1);
    expect((await limiter.peek('k')).remaining).toBe(0);
    await limiter.refund('k', 1, { chargedAt: START_MS + 999 });
    const again = await limiter.consume('k');
    expect(again.allowed).toBe(true);
    expect(again.remaining).toBe(0);
    expect((await limiter.consume('k')).allowed).toBe(false);
    // Given back from the new window's count, which holds the undated charge.
    await limiter.refund('k', 1);
    expect((await limiter.peek('k')).remaining).toBe(1);
  });

  // A refund carried no time of its charge: a bucket that had refilled since and been charged
  // again gave a later request's units back (3 at once with a burst of 2), the log its newest
  // entry, a later request's (4 in one window of 3).
  it.each([
    { algorithm: 'token-bucket' },
    { algorithm: 'token-bucket', refillAmount: 1, refillInterval: 500 },
    { algorithm: 'leaky-bucket' },
    { algorithm: 'gcra' },
  ] as const)(
    '$algorithm $refillInterval: a dated refund gives back only what its charge still holds',
    async (bucket) => {
      const clock = manualClock(START_MS);
      const limiter = createLimiter({
        ...strict,
        ...bucket,
        limit: 2,
        window: '1s',
        store: store(),
        prefix: freshPrefix(),
        clock,
      });
      expect((await limiter.consume('k')).allowed).toBe(true);
      clock.set(START_MS + 1_000);
      expect((await limiter.consume('k')).allowed).toBe(true);
      expect((await limiter.consume('k')).allowed).toBe(true);
      await limiter.refund('k', 1, { chargedAt: START_MS });
      expect((await limiter.consume('k')).allowed).toBe(false);
      // Dated at the last charge, a refund gives it back whole; but at intervals, where the
      // charge may have begun the phase, which stays, and nothing is given back.
      await limiter.refund('k', 1, { chargedAt: START_MS + 1_000 });
      expect((await limiter.consume('k')).allowed).toBe(!('refillInterval' in bucket));
      expect((await limiter.consume('k')).allowed).toBe(false);
    },
  );

  // A clock stepped back between the charge and its refund: a date ahead of it was taken as a
  // charge made now, and the buckets gave back a later request's units as if nothing had been
  // charged since; gcra, dated behind, counted only the time the stepped-back clock showed.
  it.each(['token-bucket', 'leaky-bucket', 'gcra'] as const)(
    "%s: a refund across a clock step back gives back no later request's units",
    async (algorithm) => {
      const clock = manualClock(START_MS + 1_000);
      const options = { limit: 1, window: '1s', algorithm } as const;
      const limiter = createLimiter({ ...strict, ...options, store: store(), prefix: freshPrefix(), clock });
      expect((await limiter.consume('k')).allowed).toBe(true);
      clock.set(START_MS + 2_000);
      expect((await limiter.consume('k')).allowed).toBe(true);
      clock.set(START_MS + 900);
      await limiter.refund('k', 1, { chargedAt: START_MS + 1_000 });
      clock.set(START_MS + 2_000);
      expect((await limiter.consume('k')).allowed).toBe(false);
    },
  );

  // A charge made while the clock stood behind wrote the state as of that earlier time, before
  // the charges that wrote it: a refund of one of those then found no write since its charge and
  // gave it back whole, though it had refilled before a later request was counted (two servers'
  // clocks apart, say). The client had a unit more than if that request had never come.
  it.each(['token-bucket', 'leaky-bucket'] as const)(
    '%s: a refund after a charge made behind the clock gives back no refilled charge',
    async (algorithm) => {
      const run = async (withA: boolean) => {
        const clock = manualClock(START_MS + 100);
        const options = { limit: 10, window: '1s', algorithm } as const;
        const limiter = createLimiter({ ...strict, ...options, store: store(), prefix: freshPrefix(), clock });
        if (withA) await limiter.consume('k');
        clock.set(START_MS + 300);
        await limiter.consume('k');
        clock.set(START_MS + 50);
        await limiter.consume('k');
        clock.set(START_MS + 300);
        if (withA) await limiter.refund('k', 1, { chargedAt: START_MS + 100 });
        return (await limiter.peek('k')).remaining;
      };
      expect(await run(true)).toBe(await run(false));
    },
  );

  // Each refund wrote the bucket's time, which the next refund of the same batch took for a
  // charge after its own: ten refunds of 1, 10 ms after ten charges made together, gave back 2
  // of 10 (gcra, counting the refill once for each, 1), where one refund of 10 gave back 10.
  it.each(['token-bucket', 'leaky-bucket'] as const)(
    '%s: refunds of charges made together each give back whole, as one refund of them all',
    async (algorithm) => {
      const clock = manualClock(START_MS + 1_000);
      const options = { limit: 100, window: '1s', burst: 10, algorithm } as const;
      const limiter = createLimiter({ ...strict, ...options, store: store(), prefix: freshPrefix(), clock });
      for (let i = 0; i < 10; i++) expect((await limiter.consume('k')).allowed).toBe(true);
      clock.advance(10);
      for (let i = 0; i < 10; i++) await limiter.refund('k', 1, { chargedAt: START_MS + 1_000 });
      expect((await limiter.peek('k')).remaining).toBe(10);
    },
  );

  // The clock went on to 2100 and back to 1500, where a later charge wrote the state: measured
  // on the clock as it then read, the charge at 1000 looked half refilled, where it had drained
  // whole by 2100, and half a unit of a later request's came back.
  it.each(['token-bucket', 'leaky-bucket', 'gcra'] as const)(
    '%s: a refund after the clock went on and back measures its charge to the latest reading',
    async (algorithm) => {
      const clock = manualClock(START_MS + 1_000);
      const options = { limit: 1, window: '1s', burst: 3, algorithm } as const;
      const limiter = createLimiter({ ...strict, ...options, store: store(), prefix: freshPrefix(), clock });
      expect((await limiter.consume('k')).allowed).toBe(true);
      clock.set(START_MS + 2_100);
      expect((await limiter.consume('k')).allowed).toBe(true);
      clock.set(START_MS + 1_500);
      expect((await limiter.consume('k')).allowed).toBe(true);
      await limiter.refund('k', 1, { chargedAt: START_MS + 1_000 });
      clock.set(START_MS + 1_600);
      expect((await limiter.consume('k')).allowed).toBe(false);
    },
  );

  it('gcra: a refund dated before a clock step back counts the time its state shows passed', async () => {
    const clock = manualClock(START_MS);
    const options = { limit: 4, window: '1s', algorithm: 'gcra' } as const;
    const limiter = createLimiter({ ...strict, ...options, store: store(), prefix: freshPrefix(), clock });
    expect((await limiter.consume('k', { cost: 4 })).allowed).toBe(true);
    clock.set(START_MS + 2_000);
    expect((await limiter.consume('k', { cost: 4 })).allowed).toBe(true);
    clock.set(START_MS + 100);
    await limiter.refund('k', 4, { chargedAt: START_MS });
    clock.set(START_MS + 2_000);
    expect((await limiter.consume('k')).allowed).toBe(false);
  });

  // The charge began the refill phase of a full bucket: given back, the phase stayed, and a
  // step came a second early for the later charge, which without it would have begun the phase.
  it('token-bucket at intervals: a refund of the charge that began the phase brings no step early', async () => {
    const clock = manualClock(START_MS);
    const options = {
      limit: 2,
      window: '2s',
      algorithm: 'token-bucket',
      refillAmount: 1,
      refillInterval: '1s',
    } as const;
    const limiter = createLimiter({ ...strict, ...options, store: store(), prefix: freshPrefix(), clock });
    expect((await limiter.consume('k')).allowed).toBe(true);
    clock.set(START_MS + 999);
    expect((await limiter.consume('k')).allowed).toBe(true);
    await limiter.refund('k', 1, { chargedAt: START_MS });
    clock.set(START_MS + 1_000);
    expect((await limiter.consume('k')).allowed).toBe(true);
    expect((await limiter.consume('k')).allowed).toBe(false);
  });

  // A refund after a step since its charge kept the refill phase, which without the charge a
  // later charge would have begun again: a step came early (6 passed where 4 could).
  it('token-bucket at intervals: a refund after a step since its charge moves the phase on', async () => {
    const clock = manualClock(START_MS);
    const options = {
      limit: 6,
      window: '1s',
      algorithm: 'token-bucket',
      refillAmount: 3,
      refillInterval: 500,
    } as const;
    const limiter = createLimiter({ ...strict, ...options, store: store(), prefix: freshPrefix(), clock });
    expect((await limiter.consume('k')).allowed).toBe(true);
    clock.set(START_MS + 100);
    expect((await limiter.consume('k', { cost: 5 })).allowed).toBe(true);
    clock.set(START_MS + 600);
    expect((await limiter.consume('k', { cost: 2 })).allowed).toBe(true);
    clock.set(START_MS + 640);
    await limiter.refund('k', 5, { chargedAt: START_MS + 100 });
    let passed = 0;
    for (const at of [640, 1_000]) {
      clock.set(START_MS + at);
      while (passed < 10 && (await limiter.consume('k')).allowed) passed++;
    }
    expect(passed).toBeLessThanOrEqual(4);
  });

  // Dated on the host's clock before the consume, the charge's own entry, stamped by the store's
  // clock a little later, was missed: a failed request stayed counted (Redis: 17 refunds in 100).
  it('sliding-window-log: a refund dated from before the consume to its answer finds the charge on the store’s own clock', async () => {
    const options = { limit: 3, window: '1m', algorithm: 'sliding-window-log' } as const;
    const limiter = createLimiter({ ...strict, ...options, store: store(), prefix: freshPrefix() });
    for (let i = 0; i < 20; i++) {
      const chargedAt = Date.now();
      expect((await limiter.consume('k')).allowed).toBe(true);
      await limiter.refund('k', 1, { chargedAt, answeredAt: Date.now() });
      expect((await limiter.peek('k')).remaining).toBe(3);
    }
  });

  // A later request's charge written within the span the charge was made in was taken for no
  // charge since, and the whole charge came back, though it had refilled before that write.
  it.each(['token-bucket', 'leaky-bucket', 'gcra'] as const)(
    "%s: a later charge within the span of a refund's charge is not taken for it",
    async (algorithm) => {
      const clock = manualClock(START_MS);
      const options = { limit: 10, window: '1s', algorithm } as const;
      const limiter = createLimiter({ ...strict, ...options, store: store(), prefix: freshPrefix(), clock });
      expect((await limiter.consume('k')).allowed).toBe(true);
      clock.set(START_MS + 200);
      expect((await limiter.consume('k', { cost: 5 })).allowed).toBe(true);
      clock.set(START_MS + 250);
      await limiter.refund('k', 1, { chargedAt: START_MS, answeredAt: START_MS + 250 });
      expect((await limiter.peek('k')).remaining).toBe(5);
    },
  );

  // A step after the charge: the phase was begun again at the refund, and the refund took a
  // refill step away from the client (2 left, where not refunding left 4).
  it('token-bucket at intervals: a refund after a step keeps the phase an earlier charge began', async () => {
    const clock = manualClock(START_MS);
    const options = {
      limit: 4,
      window: '10s',
      algorithm: 'token-bucket',
      refillAmount: 2,
      refillInterval: '5s',
    } as const;
    const limiter = createLimiter({ ...strict, ...options, store: store(), prefix: freshPrefix(), clock });
    expect((await limiter.consume('k', { cost: 4 })).allowed).toBe(true);
    clock.set(START_MS + 6_000);
    expect((await limiter.consume('k')).allowed).toBe(true);
    clock.set(START_MS + 6_500);
    expect((await limiter.consume('k')).allowed).toBe(true);
    clock.set(START_MS + 10_500);
    await limiter.refund('k', 1, { chargedAt: START_MS + 6_000, answeredAt: START_MS + 6_000 });
    clock.set(START_MS + 15_000);
    expect((await limiter.peek('k')).remaining).toBe(4);
  });

  it('sliding-window-log: a dated refund gives back the entry of its charge, not a later one', async () => {
    const clock = manualClock(START_MS);
    const options = { limit: 3, window: '1s', algorithm: 'sliding-window-log' } as const;
    const limiter = createLimiter({ ...strict, ...options, store: store(), prefix: freshPrefix(), clock });
    expect((await limiter.consume('k')).allowed).toBe(true);
    clock.set(START_MS + 500);
    expect((await limiter.consume('k', { cost: 2 })).allowed).toBe(true);
    clock.set(START_MS + 600);
    await limiter.refund('k', 1, { chargedAt: START_MS });
    expect((await limiter.consume('k')).allowed).toBe(true);
    expect((await limiter.consume('k')).allowed).toBe(false);
    // Three in (START, START + 1000] already: the units at START + 500 and + 600.
    clock.set(START_MS + 1_000);
    expect((await limiter.consume('k')).allowed).toBe(false);
    clock.set(START_MS + 1_500);
    expect((await limiter.peek('k')).remaining).toBe(2);
  });

  // Redis read a client past some state's reset and wrote the string without it: a peek or a
  // refusal trimmed a log's expired entries (and rewrote the string, dropping every policy
  // fully reset by then), a refund dropped a state its window had ended. Memory keeps them,
  // and a clock that then stepped back found them counting there and fresh on Redis.
  describe('what a later read leaves, for a clock that then steps back', () => {
    const clockAt = (ms: number) => manualClock(START_MS + ms);
    const admittedOf = async (limiter: Limiter, tries: number) => {
      let admitted = 0;
      for (let i = 0; i < tries; i++) if ((await limiter.consume('k')).allowed) admitted++;
      return admitted;
    };

    it.each([
      ['a peek', (limiter: Limiter) => limiter.peek('k')],
      ['a refused cost', (limiter: Limiter) => limiter.consume('k', { cost: 3 })],
    ])('sliding-window-log: %s past the window trims nothing', async (_, read) => {
      const clock = clockAt(0);
      const options = { limit: 2, window: '1m', algorithm: 'sliding-window-log' } as const;
      const limiter = createLimiter({ ...strict, ...options, store: store(), prefix: freshPrefix(), clock });
      expect(await admittedOf(limiter, 2)).toBe(2);
      clock.set(START_MS + MINUTE + 1);
      await read(limiter);
      clock.set(START_MS + MINUTE / 2);
      expect(await admittedOf(limiter, 3)).toBe(0);
    });

    it("a log's peek keeps the other policies' states fully reset by then", async () => {
      const clock = clockAt(1_000);
      const policies = [
        { name: 'minute', limit: 1, window: '1m', algorithm: 'fixed-window' },
        { name: 'second', limit: 5, window: '1s', algorithm: 'sliding-window-log' },
      ] as const;
      const limiter = createLimiter({ ...strict, policies, store: store(), prefix: freshPrefix(), clock });
      expect(await admittedOf(limiter, 1)).toBe(1);
      clock.set(START_MS + MINUTE);
      await limiter.peek('k');
      clock.set(START_MS + 2_000);
      expect(await admittedOf(limiter, 2)).toBe(0);
    });

    it("a refund after a window ended keeps that window's count beside a policy that still counts", async () => {
      const clock = clockAt(1_000);
      const policies = [
        { name: 'minute', limit: 3, window: '1m', algorithm: 'fixed-window' },
        { name: 'hour', limit: 100, window: '1h', algorithm: 'gcra' },
      ] as const;
      const limiter = createLimiter({ ...strict, policies, store: store(), prefix: freshPrefix(), clock });
      expect((await limiter.consume('k', { cost: 3 })).allowed).toBe(true);
      clock.set(START_MS + MINUTE);
      await limiter.refund('k', 1);
      clock.set(START_MS + 2_000);
      expect(await admittedOf(limiter, 5)).toBe(0);
    });
  });
}
