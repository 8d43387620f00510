import { randomUUID } from 'node:crypto';
import { createLimiter, type Decision } from '@sluice/core';
import { createRedisStore } from '@sluice/redis';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectRedis, deleteKeys, standaloneRedis } from '../helpers/redis-env.js';
import { decodeStates } from '../helpers/redis-state.js';

const target = await standaloneRedis();
const NOW = 1_700_000_000_000;

/** A state string's records as text, in any order: the general body writes other slots' in table order. */
const entries = (raw: Buffer | null) =>
  (raw === null ? [] : decodeStates(raw))
    .map((r) => `${r.slot}@${r.version}=${[...r.numbers, r.used, r.resetAt].join()}`)
    .sort();

/**
 * The state of a policy the limiter no longer has, resetting at `resetAt`, in the text layout
 * of earlier versions (which every general-body write replaces), and the entry it becomes.
 */
const dropped = (resetAt: number) => ({
  text: ` gone@fw.9.60000.9.0.0=28333333,1;1,${resetAt}`,
  entry: `gone@fw.9.60000.9.0.0=28333333,1,0,1,${resetAt}`,
});
const withDropped = (raw: Buffer | null, resetAt: number) => [...entries(raw), dropped(resetAt).entry].sort();

/**
 * A one-policy limiter of gcra or sliding-window-counter is decided by its script's
 * straight-line path while the client's string holds only its own state, and by the general
 * body otherwise (here: the string also holds the state of a policy the limiter no longer
 * has). Both must decide alike and write the same state, or a client moving between them (a
 * deploy that drops a policy, a batch, a refund) would see its quota change.
 */
describe.skipIf(target.skip)('Redis store: the straight-line path and the general body agree', () => {
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

  for (const algorithm of ['gcra', 'sliding-window-counter'] as const) {
    it(`${algorithm}: same decisions and same state with or without a dropped policy's state beside it`, async () => {
      let now = NOW;
      const limiter = createLimiter({
        limit: 3,
        window: 1000,
        algorithm,
        store: createRedisStore({ client, prefix }),
        prefix: algorithm,
        clock: () => now,
        storeTimeoutMs: 10_000,
      });
      // Still within its window at every step below, so the general body keeps it.
      await client.set(`${prefix}{${algorithm}|general}`, dropped(NOW + 60_000).text);
      const seen: Array<[Decision, Decision]> = [];
      for (const step of [0, 0, 0, 0, 10, 340, 1, 500, 999, 1500]) {
        now += step;
        const straight = await limiter.consume('straight');
        const general = await limiter.consume('general');
        seen.push([straight, general]);
        const [own, beside] = await Promise.all([
          client.getBuffer(`${prefix}{${algorithm}|straight}`),
          client.getBuffer(`${prefix}{${algorithm}|general}`),
        ]);
        expect(entries(beside)).toEqual(withDropped(own, NOW + 60_000));
      }
      for (const [straight, general] of seen) {
        expect(straight.reason).toBeUndefined();
        expect({ ...straight, key: '' }).toEqual({ ...general, key: '' });
      }
      // Both paths were walked: charged, refused, and a state that expired.
      expect(new Set(seen.map(([d]) => d.allowed))).toEqual(new Set([true, false]));
    });

    it(`${algorithm}: a batch decides alike whether it runs straight or, for one client's dropped policy, all in the general body`, async () => {
      let now = NOW;
      const limiterUnder = (prefixOfRun: string) =>
        createLimiter({
          limit: 2,
          window: 1000,
          algorithm,
          store: createRedisStore({ client, prefix: `${prefix}${prefixOfRun}` }),
          prefix: `batch-${algorithm}`,
          clock: () => now,
          storeTimeoutMs: 10_000,
        });
      const straight = limiterUnder('straight:');
      const general = limiterUnder('general:');
      await client.set(`${prefix}general:{batch-${algorithm}|k0}`, dropped(NOW + 60_000).text);
      const clients = ['k0', 'k1', 'k2', 'k3'];
      const allowed = new Set<boolean>();
      for (const step of [0, 0, 0, 400, 700]) {
        now += step;
        // Asked in one turn, each set of four travels as one call.
        const [ofStraight, ofGeneral] = await Promise.all([
          Promise.all(clients.map((k) => straight.consume(k))),
          Promise.all(clients.map((k) => general.consume(k))),
        ]);
        for (const [i, decision] of ofStraight.entries()) {
          expect(decision.reason).toBeUndefined();
          expect(decision).toEqual(ofGeneral[i]);
          allowed.add(decision.allowed);
        }
        for (const k of clients) {
          const [own, beside] = await Promise.all([
            client.getBuffer(`${prefix}straight:{batch-${algorithm}|${k}}`),
            client.getBuffer(`${prefix}general:{batch-${algorithm}|${k}}`),
          ]);
          expect(entries(beside)).toEqual(k === 'k0' ? withDropped(own, NOW + 60_000) : entries(own));
        }
      }
      expect(allowed).toEqual(new Set([true, false]));
    });
  }

  // Policies whose limits run out at different steps, so that some decisions are refused by
  // one policy while the others would allow, and each reports its quota as it stands. One
  // decision of 2 to 4 policies has a block of its own per count; of 5, the loop decides it.
  const manyPolicies = [
    { name: 'second', limit: 2, window: 1000 },
    { name: 'minute', limit: 5, window: 4000 },
    { name: 'burst', limit: 3, window: 2000 },
    { name: 'hour', limit: 7, window: 8000 },
    { name: 'spike', limit: 4, window: 3000 },
  ];
  for (const algorithm of ['gcra', 'sliding-window-counter'] as const) {
    for (const count of [2, 3, 4, 5]) {
      it(`${algorithm}, ${count} policies: the same decisions and states, one call or a batch, with or without a dropped policy's state`, async () => {
        let now = NOW;
        const limiterUnder = (prefixOfRun: string) =>
          createLimiter({
            policies: manyPolicies.slice(0, count).map((policy) => ({ ...policy, algorithm })),
            store: createRedisStore({ client, prefix: `${prefix}${prefixOfRun}` }),
            prefix: `many-${count}-${algorithm}`,
            clock: () => now,
            storeTimeoutMs: 10_000,
          });
        const straight = limiterUnder('many-straight:');
        const general = limiterUnder('many-general:');
        // Every client of the general limiter holds it, so all its decisions run the general body.
        const clients = ['k0', 'b0', 'b1', 'd0'];
        for (const k of clients) {
          await client.set(`${prefix}many-general:{many-${count}-${algorithm}|${k}}`, dropped(NOW + 60_000).text);
        }
        const outcomes = new Set<string>();
        for (const step of [0, 0, 0, 300, 700, 0, 0, 1200, 2500, 4100]) {
          now += step;
          // k0 alone is one call; b0 and b1, asked in one turn, travel as one batch; so does d0
          // asked twice, which the general body decides in order on both sides.
          const ofStraight = [
            await straight.consume('k0'),
            ...(await Promise.all(['b0', 'b1'].map((k) => straight.consume(k)))),
            ...(await Promise.all(['d0', 'd0'].map((k) => straight.consume(k)))),
          ];
          const ofGeneral = [
            await general.consume('k0'),
            ...(await Promise.all(['b0', 'b1'].map((k) => general.consume(k)))),
            ...(await Promise.all(['d0', 'd0'].map((k) => general.consume(k)))),
          ];
          for (const [i, decision] of ofStraight.entries()) {
            expect(decision.reason).toBeUndefined();
            expect({ ...decision, key: '' }).toEqual({ ...ofGeneral[i], key: '' });
            outcomes.add(decision.policies.map((p) => p.allowed).join());
          }
          for (const k of clients) {
            const [own, beside] = await Promise.all([
              client.getBuffer(`${prefix}many-straight:{many-${count}-${algorithm}|${k}}`),
              client.getBuffer(`${prefix}many-general:{many-${count}-${algorithm}|${k}}`),
            ]);
            expect(entries(beside)).toEqual(withDropped(own, NOW + 60_000));
            // The same expiry too: on an injected clock, at least 60 s (read a moment apart).
            const [ownTtl, besideTtl] = await Promise.all([
              client.pttl(`${prefix}many-straight:{many-${count}-${algorithm}|${k}}`),
              client.pttl(`${prefix}many-general:{many-${count}-${algorithm}|${k}}`),
            ]);
            expect(Math.abs(ownTtl - besideTtl)).toBeLessThan(1000);
          }
        }
        // Charged, and refused by one policy while the others would allow.
        expect(outcomes.has(Array(count).fill('true').join())).toBe(true);
        expect([...outcomes].some((o) => o.includes('true') && o.includes('false'))).toBe(true);
      });
    }
  }
  // Versions before the directory layout wrote each state as text; a client's quota carries
  // over an upgrade, and the first write replaces the text.
  for (const algorithm of ['gcra', 'sliding-window-counter'] as const) {
    it(`${algorithm}: a state in the earlier text layout decides as the same state in this one, and is rewritten`, async () => {
      let now = NOW;
      const limiter = createLimiter({
        policies: manyPolicies.slice(0, 3).map((policy) => ({ ...policy, algorithm })),
        store: createRedisStore({ client, prefix }),
        prefix: `earlier-${algorithm}`,
        clock: () => now,
        storeTimeoutMs: 10_000,
      });
      const [current, earlier] = ['current', 'earlier'].map((k) => `${prefix}{earlier-${algorithm}|${k}}`) as [
        string,
        string,
      ];
      await limiter.consume('current');
      await limiter.consume('current');
      const records = decodeStates((await client.getBuffer(current)) as Buffer);
      expect(records.map((r) => r.slot)).toEqual(['second', 'minute', 'burst']);
      const numbers = (r: (typeof records)[number]) => (algorithm === 'gcra' ? r.numbers.slice(0, 2) : r.numbers);
      const text = records.map((r) => ` ${r.slot}@${r.version}=${numbers(r).join()};${r.used},${r.resetAt}`).join('');
      await client.set(earlier, text, 'PX', 60_000);
      // Refused first (the second policy is spent), which writes nothing; then charged.
      let charged = false;
      for (const step of [0, 2000, 300, 4000]) {
        now += step;
        const [ofCurrent, ofEarlier] = [await limiter.consume('current'), await limiter.consume('earlier')];
        expect({ ...ofEarlier, key: '' }).toEqual({ ...ofCurrent, key: '' });
        charged ||= ofCurrent.allowed;
        if (charged) expect(entries(await client.getBuffer(earlier))).toEqual(entries(await client.getBuffer(current)));
        else expect(await client.get(earlier)).toBe(text);
      }
      expect(charged).toBe(true);
    });
  }

  // On Redis's own clock the straight-line entry compares the usual run headers whole instead
  // of cutting them: one decision of cost 1 over 1 to 4 policies. Other headers (10 policies,
  // a cost above 1, a batch) are cut, and their kinds checked to be the script's algorithm's.
  // Windows of hours keep every charge of a test in one window of every policy, so the
  // counter's strings match to the character, and a straight-line charge keeps a TTL stretched
  // by hand, which the general body sets anew: that tells which ran.
  for (const [label, policyCount, cost, batch] of [
    ['one policy', 1, 1, 1],
    ['three policies', 3, 1, 1],
    ['two policies', 2, 1, 1],
    ['four policies', 4, 1, 1],
    ['ten policies', 10, 1, 1],
    ['three policies, a batch of 4', 3, 1, 4],
    ['two policies, a cost of 3', 2, 3, 1],
    ['a cost of 10', 1, 10, 1],
    ['a batch of 10', 1, 1, 10],
  ] as const) {
    it(`sliding-window-counter on Redis's clock, ${label}: the same decisions and states either way`, async () => {
      const run = `clock-${policyCount}-${cost}-${batch}`;
      const limiterUnder = (prefixOfRun: string) =>
        createLimiter({
          policies: Array.from({ length: policyCount }, (_, i) => ({
            name: `p${i}`,
            limit: 1_000,
            window: `${i + 1}h` as const,
            algorithm: 'sliding-window-counter' as const,
          })),
          store: createRedisStore({ client, prefix: `${prefix}${prefixOfRun}` }),
          prefix: run,
          storeTimeoutMs: 10_000,
        });
      const straight = limiterUnder('clock-straight:');
      const general = limiterUnder('clock-general:');
      const droppedReset = Date.now() + 36_000_000;
      const clients = Array.from({ length: batch }, (_, i) => `k${i}`);
      for (const k of clients) await client.set(`${prefix}clock-general:{${run}|${k}}`, dropped(droppedReset).text);
      const stretched = 100 * 3_600_000;
      for (let step = 0; step < 3; step++) {
        if (step > 0) {
          for (const k of clients) {
            await client.pexpire(`${prefix}clock-straight:{${run}|${k}}`, stretched);
            await client.pexpire(`${prefix}clock-general:{${run}|${k}}`, stretched);
          }
        }
        // Asked in one turn, a batch travels as one call.
        const [ofStraight, ofGeneral] = await Promise.all([
          Promise.all(clients.map((k) => straight.consume(k, { cost }))),
          Promise.all(clients.map((k) => general.consume(k, { cost }))),
        ]);
        for (const [i, decision] of ofStraight.entries()) {
          const other = ofGeneral[i] as Decision;
          expect(decision.reason).toBeUndefined();
          expect(decision.policies.map((p) => p.remaining)).toEqual(other.policies.map((p) => p.remaining));
          expect(decision.remaining).toBe(1_000 - cost * (step + 1));
        }
        for (const k of clients) {
          const [own, beside] = await Promise.all([
            client.getBuffer(`${prefix}clock-straight:{${run}|${k}}`),
            client.getBuffer(`${prefix}clock-general:{${run}|${k}}`),
          ]);
          expect(entries(beside)).toEqual(withDropped(own, droppedReset));
          if (step === 0) continue;
          const [ownTtl, besideTtl] = await Promise.all([
            client.pttl(`${prefix}clock-straight:{${run}|${k}}`),
            client.pttl(`${prefix}clock-general:{${run}|${k}}`),
          ]);
          expect(ownTtl).toBeGreaterThan(stretched - 60_000);
          expect(besideTtl).toBeLessThan(stretched - 60_000);
        }
      }
    });
  }
});
