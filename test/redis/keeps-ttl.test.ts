import { randomUUID } from 'node:crypto';
import { createLimiter, type Duration, type Limiter, type PolicyOptions } from '@sluice/core';
import { createRedisStore } from '@sluice/redis';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectRedis, deleteKeys, standaloneRedis } from '../helpers/redis-env.js';
import { decodeStates, encodeStates } from '../helpers/redis-state.js';

const target = await standaloneRedis();

const HOUR = 3_600_000;
/** Far longer than any TTL a charge below sets (two windows of the longest policy, a day). */
const LONG_TTL = 100 * HOUR;

/** Each stored reset time of the string's states `by` ms earlier, or only the named slot's. */
const resetsEarlier = (raw: Buffer, by: number, slot?: string): Buffer =>
  encodeStates(
    decodeStates(raw).map((r) => (slot === undefined || r.slot === slot ? { ...r, resetAt: r.resetAt - by } : r)),
  );

/**
 * A sliding-window-counter charge whose resets all fall no later than the latest reset time the
 * client's string holds (within the windows of the last charge, say) is covered by the key's
 * TTL, so on Redis's own clock its write keeps that TTL instead of setting a new expiry. These
 * tests run on Redis's clock (no injected one): every window is an hour or more, so the charges
 * of a test fall in one window unless one ends in the few milliseconds between them. A key's
 * TTL is stretched by hand to see whether a charge kept it or set its own.
 */
describe.skipIf(target.skip)(
  'Redis store: a sliding-window-counter charge keeps the TTL that already covers it',
  () => {
    const prefix = `sluice-test:${randomUUID()}:`;
    let client: Redis;

    beforeAll(async () => {
      client = await connectRedis(target.require());
    });

    afterAll(async () => {
      if (client === undefined) return;
      await deleteKeys(client, prefix);
      client.disconnect();
    });

    const limiterOf = (name: string, policies: PolicyOptions[], clock?: () => number): Limiter =>
      createLimiter({
        policies,
        store: createRedisStore({ client, prefix }),
        prefix: name,
        storeTimeoutMs: 10_000,
        ...(clock === undefined ? {} : { clock }),
      });
    const keyOf = (name: string, clientKey: string) => `${prefix}{${name}|${clientKey}}`;
    const counter = (name: string, window: Duration, limit = 100): PolicyOptions => ({
      name,
      limit,
      window,
      algorithm: 'sliding-window-counter',
    });
    const three = [counter('hour', '1h'), counter('two', '2h'), counter('day', '1d')];
    /** The TTL a charge sets itself: at most two windows of its longest policy. */
    const setByCharge = (ttl: number, decisionResetMs: number) =>
      ttl <= 2 * 86_400_000 && ttl >= decisionResetMs - 1000;

    for (const [label, policies] of [
      ['one policy', [counter('hour', '1h')]],
      ['three policies', three],
    ] as const) {
      it(`${label}: a second charge in the window keeps the key's TTL and writes the state`, async () => {
        const name = `keep-${policies.length}`;
        const limiter = limiterOf(name, [...policies]);
        const first = await limiter.consume('c');
        const key = keyOf(name, 'c');
        expect(await client.pttl(key)).toBeGreaterThanOrEqual(first.resetAfterMs - 1000);
        await client.pexpire(key, LONG_TTL);

        const second = await limiter.consume('c');
        expect(second.allowed).toBe(true);
        expect(second.remaining).toBe(first.remaining - 1);
        expect(await client.pttl(key)).toBeGreaterThan(LONG_TTL - 60_000);
        // The state was written all the same: the third charge counts the two before it.
        expect((await limiter.consume('c')).remaining).toBe(first.remaining - 2);
      });

      it(`${label}: a charge that resets later than the stored state sets the TTL it needs`, async () => {
        const name = `later-${policies.length}`;
        const limiter = limiterOf(name, [...policies]);
        await limiter.consume('c');
        const key = keyOf(name, 'c');
        // Every stored reset time a minute earlier, and a TTL that covers no more than that.
        const raw = (await client.getBuffer(key)) as Buffer;
        const earlier = resetsEarlier(raw, 60_000);
        expect(earlier).not.toEqual(raw);
        await client.set(key, earlier, 'PX', 5_000);

        const decision = await limiter.consume('c');
        expect(decision.allowed).toBe(true);
        expect(setByCharge(await client.pttl(key), decision.resetAfterMs)).toBe(true);
      });
    }

    it('three policies: one policy resetting later than its stored state is enough to set the TTL', async () => {
      const limiter = limiterOf('one-later', three);
      await limiter.consume('c');
      const key = keyOf('one-later', 'c');
      const raw = (await client.getBuffer(key)) as Buffer;
      // The longest policy's alone: a check that read only the first policy would keep the TTL.
      const dayEarlier = resetsEarlier(raw, 60_000, 'day');
      expect(dayEarlier).not.toEqual(raw);
      expect(resetsEarlier(raw, 60_000, 'hour')).not.toEqual(dayEarlier);
      await client.set(key, dayEarlier, 'PX', LONG_TTL);

      const decision = await limiter.consume('c');
      expect(setByCharge(await client.pttl(key), decision.resetAfterMs)).toBe(true);
    });

    it('three policies: a shorter policy resetting later than its own stored state, within the latest one, keeps the TTL', async () => {
      const limiter = limiterOf('within', three);
      await limiter.consume('c');
      const key = keyOf('within', 'c');
      const raw = (await client.getBuffer(key)) as Buffer;
      // The hour policy's stored reset a minute earlier: its charge now resets later than that,
      // yet long before the day policy's, which the key's TTL already covers.
      const hourEarlier = resetsEarlier(raw, 60_000, 'hour');
      expect(hourEarlier).not.toEqual(raw);
      await client.set(key, hourEarlier, 'PX', LONG_TTL);

      const decision = await limiter.consume('c');
      expect(decision.policies.map((p) => p.remaining)).toEqual([98, 98, 98]);
      const ttl = await client.pttl(key);
      expect(ttl).toBeGreaterThan(LONG_TTL - 60_000);
      // The key outlasts every state it holds.
      const now = Date.now();
      for (const record of decodeStates((await client.getBuffer(key)) as Buffer)) {
        expect(now + ttl).toBeGreaterThanOrEqual(record.resetAt);
      }
    });

    it('three policies: a policy with no stored state (one just added) sets the TTL', async () => {
      const before = limiterOf('added', three.slice(0, 2));
      await before.consume('c');
      const key = keyOf('added', 'c');
      await client.pexpire(key, LONG_TTL);
      // The same prefix, now with the day policy too: its state is not in the string yet.
      const after = limiterOf('added', three);
      const decision = await after.consume('c');
      expect(setByCharge(await client.pttl(key), decision.resetAfterMs)).toBe(true);
      expect(decision.policies.map((p) => p.remaining)).toEqual([98, 98, 99]);
    });

    it('a batch: each client keeps or sets its own TTL', async () => {
      const limiter = limiterOf('batch', [counter('hour', '1h')]);
      const clients = ['kept', 'set', 'fresh', 'kept2'];
      await Promise.all(clients.slice(0, 3).map((k) => limiter.consume(k)));
      await limiter.consume('kept2');
      await client.del(keyOf('batch', 'fresh'));
      await client.pexpire(keyOf('batch', 'kept'), LONG_TTL);
      await client.pexpire(keyOf('batch', 'kept2'), LONG_TTL);
      const setKey = keyOf('batch', 'set');
      await client.set(setKey, resetsEarlier((await client.getBuffer(setKey)) as Buffer, 60_000), 'PX', LONG_TTL);

      // Asked in one turn, the four travel as one call.
      const decisions = await Promise.all(clients.map((k) => limiter.consume(k)));
      const ttls = await Promise.all(clients.map((k) => client.pttl(keyOf('batch', k))));
      for (const [i, k] of clients.entries()) {
        const decision = decisions[i] as (typeof decisions)[number];
        expect(decision.remaining).toBe(k === 'fresh' ? 99 : 98);
        const ttl = ttls[i] as number;
        if (k.startsWith('kept')) expect(ttl).toBeGreaterThan(LONG_TTL - 60_000);
        else expect(setByCharge(ttl, decision.resetAfterMs)).toBe(true);
      }
    });

    it('on an injected clock a charge always sets its TTL: Redis cannot relate that clock to its own', async () => {
      const now = Date.now();
      const limiter = limiterOf('injected', [counter('hour', '1h')], () => now);
      await limiter.consume('c');
      const key = keyOf('injected', 'c');
      await client.pexpire(key, LONG_TTL);
      const decision = await limiter.consume('c');
      const ttl = await client.pttl(key);
      expect(ttl).toBeLessThanOrEqual(decision.resetAfterMs);
      expect(ttl).toBeGreaterThanOrEqual(decision.resetAfterMs - 1000);
    });

    it('a charge that resets no later leaves the key lasting at least as long as every decision needs', async () => {
      const limiter = limiterOf('covers', [counter('hour', '1h', 1_000)]);
      for (let i = 0; i < 20; i++) {
        const decision = await limiter.consume('c');
        expect(decision.allowed).toBe(true);
        expect(await client.pttl(keyOf('covers', 'c'))).toBeGreaterThanOrEqual(decision.resetAfterMs - 1000);
      }
    });
  },
);
