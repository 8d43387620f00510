import { randomUUID } from 'node:crypto';
import { type AlgorithmName, algorithmNames, createLimiter, type Decision, type PolicyOptions } from '@sluice/core';
import { createRedisStore, type RedisStore } from '@sluice/redis';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../helpers/clock.js';
import { connectRedis, deleteKeys, standaloneRedis } from '../helpers/redis-env.js';
import { decodeStates } from '../helpers/redis-state.js';

// A client's key holding what sluice never wrote there (bytes damaged by hand, a value of
// another type written by another app) is read as no state and overwritten by the next
// charge, alone or batched, on every path of the scripts: one such client neither fails the
// call it joins, whose other decisions Redis has charged, nor fails open for good.

const target = await standaloneRedis();

const LIMIT = 3;
/** One policy (gcra's and the counter's unrolled path) or five (their loop past four policies). */
const policyCounts = [1, 5];

const policiesOf = (algorithm: AlgorithmName, count: number): PolicyOptions[] =>
  Array.from({ length: count }, (_, i) => ({ name: `p${i}`, limit: LIMIT, window: 60_000 * (i + 1), algorithm }));

/** Every byte after a state string's directory replaced: 0xff reads as NaN, 0x7f as a huge number. */
function damaged(raw: Buffer, byte: number): Buffer {
  const end = raw.indexOf(0);
  return Buffer.concat([raw.subarray(0, end + 1), Buffer.alloc(raw.length - end - 1, byte)]);
}

/** Every number of a state string set to `value`. */
function everyNumber(raw: Buffer, value: number): Buffer {
  const copy = Buffer.from(raw);
  for (let at = copy.indexOf(0) + 1; at + 8 <= copy.length; at += 8) copy.writeDoubleLE(value, at);
  return copy;
}

/** A state string with its first state's second number (a window's count) set to `value`. */
function secondNumber(raw: Buffer, value: number): Buffer {
  const copy = Buffer.from(raw);
  copy.writeDoubleLE(value, copy.indexOf(0) + 9);
  return copy;
}

/** A damaged string whose first number is 1.5: whole numbers only. */
function fractional(raw: Buffer): Buffer {
  const copy = Buffer.from(raw);
  copy.writeDoubleLE(1.5, copy.indexOf(0) + 1);
  return copy;
}

describe.skipIf(target.skip)('a client key damaged outside sluice, on Redis', () => {
  const prefix = `sluice-test:${randomUUID()}:`;
  let client: Redis;
  let store: RedisStore;
  beforeAll(async () => {
    client = await connectRedis(target.require());
    store = createRedisStore({ client, prefix, denyCache: false });
  });
  afterAll(async () => {
    if (client === undefined) return;
    await deleteKeys(client, prefix);
    client.disconnect();
  });

  const limiterOf = (name: string, algorithm: AlgorithmName, count: number) => {
    const clock = manualClock();
    // 'deny': a decision the store could not make shows as refused, with its reason.
    const limiter = createLimiter({
      policies: policiesOf(algorithm, count),
      store,
      prefix: name,
      clock,
      onStoreError: 'deny',
    });
    return { limiter, clock, keyOf: (client: string) => `${prefix}{${name}|${client}}` };
  };

  const fresh = (decision: Decision) => ({
    reason: decision.reason,
    allowed: decision.allowed,
    left: decision.remaining,
  });
  const FRESH = { reason: undefined, allowed: true, left: LIMIT - 1 };

  for (const algorithm of algorithmNames) {
    for (const count of policyCounts) {
      for (const [damage, spoil] of [
        ['NaN', (raw: Buffer) => damaged(raw, 0xff)],
        ['a huge number', (raw: Buffer) => damaged(raw, 0x7f)],
        ['a fraction', fractional],
      ] as const) {
        it(`${algorithm}, ${count} ${count === 1 ? 'policy' : 'policies'}: a state of ${damage} reads as fresh, alone and in a batch`, async () => {
          const name = `${algorithm}-${count}-${damage.replaceAll(' ', '-')}`;
          const { limiter, keyOf } = limiterOf(name, algorithm, count);
          for (const id of ['alone', 'batched']) {
            await limiter.consume(id);
            await limiter.consume(id);
            const raw = (await client.getBuffer(keyOf(id))) as Buffer;
            await client.set(keyOf(id), spoil(raw), 'PX', 60_000);
          }
          expect(fresh(await limiter.consume('alone'))).toEqual(FRESH);
          // Decided together with clients whose states are sound: each is charged and told so.
          const batch = await Promise.all(['good-1', 'batched', 'good-2'].map((id) => limiter.consume(id)));
          expect(batch.map(fresh)).toEqual([FRESH, FRESH, FRESH]);
          for (const id of ['alone', 'batched', 'good-1']) {
            const states = decodeStates((await client.getBuffer(keyOf(id))) as Buffer);
            expect(states.flatMap((s) => [...s.numbers, s.used, s.resetAt]).every(Number.isSafeInteger)).toBe(true);
            expect(fresh(await limiter.peek(id))).toMatchObject({ reason: undefined, left: LIMIT - 1 });
          }
        });
      }

      it(`${algorithm}, ${count} ${count === 1 ? 'policy' : 'policies'}: a value of another type at the client key reads as fresh, alone and in a batch`, async () => {
        const { limiter, keyOf } = limiterOf(`${algorithm}-${count}-typed`, algorithm, count);
        await client.hset(keyOf('alone'), 'field', 'value');
        await client.rpush(keyOf('batched'), 'entry');
        expect(fresh(await limiter.consume('alone'))).toEqual(FRESH);
        const batch = await Promise.all(['good', 'batched'].map((id) => limiter.consume(id)));
        expect(batch.map(fresh)).toEqual([FRESH, FRESH]);
        for (const id of ['alone', 'batched']) expect(await client.type(keyOf(id))).toBe('string');
      });
    }
  }

  // Whole numbers below 2^53 pass the string's check, yet no sound write leaves 10^15 there (a
  // window that far ahead, a gcra fraction past its limit): the waits they gave passed 2^53,
  // and the reply's reader refused the whole call, the clients batched with it charged and told
  // the store failed, the damaged one failing for as long as its key lived.
  for (const algorithm of algorithmNames) {
    for (const count of policyCounts) {
      it(`${algorithm}, ${count} ${count === 1 ? 'policy' : 'policies'}: a state of 10^15s fails no decision batched with it`, async () => {
        const { limiter, keyOf } = limiterOf(`${algorithm}-${count}-far`, algorithm, count);
        await limiter.consume('far');
        const raw = (await client.getBuffer(keyOf('far'))) as Buffer;
        await client.set(keyOf('far'), everyNumber(raw, 1e15));
        const batch = await Promise.all(['good-1', 'far', 'good-2'].map((id) => limiter.consume(id)));
        expect(batch.map((decision) => decision.reason)).toEqual([undefined, undefined, undefined]);
        expect([fresh(batch[0] as Decision), fresh(batch[2] as Decision)]).toEqual([FRESH, FRESH]);
        // A window that far ahead, or a gcra fraction past its limit, reads as fresh. A bucket's
        // or a log's times that far ahead read as a clock that stepped back (README).
        if (algorithm === 'fixed-window' || algorithm === 'sliding-window-counter' || algorithm === 'gcra')
          expect(fresh(batch[1] as Decision)).toEqual(FRESH);
      });
    }
  }

  // A sound TAT lies as far ahead as the tolerance at the largest overage a throttle gives (11
  // times a capacity × window of 2^49): bounded at 2^51 ms, such a state read as damaged, and a
  // client was never refused again.
  it('gcra: a sound state at the largest overage and window is not read as damaged', async () => {
    const limiter = createLimiter({
      limit: 1,
      window: 2 ** 49,
      algorithm: 'gcra',
      throttle: { mode: 'soft', overagePercent: 1000 },
      store,
      prefix: 'gcra-overage',
      clock: manualClock(),
    });
    const allowed: boolean[] = [];
    for (let i = 0; i < 14; i++) allowed.push((await limiter.consume('k')).allowed);
    expect(allowed.filter(Boolean)).toHaveLength(11);
  });

  // A sound state's numbers each fit 2^53, yet at the largest capacity × window a throttle gives
  // (11 × 2^49, a window of 1 ms) they can sum past it: checked by their sum alone, such a state
  // read as damaged, and a client charged 2^52 units three times in one millisecond was admitted
  // each time, where the memory store refused the second.
  for (const algorithm of algorithmNames) {
    it.each([1, 2])(
      `${algorithm}, %i policies: a sound state summing past 2^53 is read as the memory store reads it`,
      async (count) => {
        const options = {
          policies: Array.from({ length: count }, (_, i) => ({ name: `p${i}`, limit: 2 ** 49, window: 1, algorithm })),
          throttle: { mode: 'soft', overagePercent: 1000 },
          prefix: `largest-${algorithm}-${count}`,
          clock: manualClock(),
        } as const;
        const onRedis = createLimiter({ ...options, store });
        const inMemory = createLimiter(options);
        const figures = ({ allowed, remaining, retryAfterMs }: Decision) => ({ allowed, remaining, retryAfterMs });
        for (let i = 0; i < 3; i++) {
          const decided = await onRedis.consume('k', { cost: 2 ** 52 });
          expect(figures(decided)).toEqual(figures(await inMemory.consume('k', { cost: 2 ** 52 })));
        }
      },
    );
  }

  // A count below 0 admitted past the limit: -1000 in a window gave the client 1,000 more.
  for (const algorithm of ['fixed-window', 'sliding-window-counter'] as const) {
    it(`${algorithm}: a count below 0 reads as fresh, not as room past the limit`, async () => {
      const { limiter, keyOf } = limiterOf(`${algorithm}-negative`, algorithm, 1);
      await limiter.consume('below');
      const raw = (await client.getBuffer(keyOf('below'))) as Buffer;
      await client.set(keyOf('below'), secondNumber(raw, -1000), 'PX', 60_000);
      expect(fresh(await limiter.consume('below'))).toEqual(FRESH);
    });
  }

  // A log's list is written as its decision goes, its total in the string at the end: an
  // error on a later decision's list would leave this one's entry charged and its total not.
  it('sliding-window-log: a list key of another type in a batch charges every decision once', async () => {
    const { limiter, keyOf } = limiterOf('log-typed-list', 'sliding-window-log', 1);
    await limiter.consume('b');
    await client.set(`${keyOf('b')}:p0`, 'not a list');
    const batch = await Promise.all(['a', 'b'].map((id) => limiter.consume(id)));
    expect(batch.map(fresh)).toEqual([FRESH, FRESH]);
    for (const id of ['a', 'b']) {
      expect(await client.llen(`${keyOf(id)}:p0`)).toBe(2);
      expect(decodeStates((await client.getBuffer(keyOf(id))) as Buffer)[0]?.numbers[0]).toBe(1);
    }
  });

  // Each a list no version of sluice writes; `at` is the time of the entry the client has.
  const damagedLists: [string, (at: number) => (string | number)[]][] = [
    ['a time that is no number', () => ['noon', 1]],
    ['a cost that is no number', (at) => [at, 'one']],
    ['a fractional cost', (at) => [at, 0.5]],
    ['a cost of 0', (at) => [at, 0]],
    ['a time past 2^53', () => [2 ** 53, 1]],
    ['an entry without its pair', (at) => [at, 1, at]],
    ['a damaged newest entry', (at) => [at, 1, at + 1, 'x']],
  ];
  for (const [index, [damage, entriesOf]] of damagedLists.entries()) {
    it(`sliding-window-log: a list with ${damage} reads as fresh, alone and in a batch`, async () => {
      const { limiter, clock, keyOf } = limiterOf(`log-damaged-${index}`, 'sliding-window-log', 1);
      for (const id of ['alone', 'batched']) {
        await limiter.consume(id);
        await client.del(`${keyOf(id)}:p0`);
        await client.rpush(`${keyOf(id)}:p0`, ...entriesOf(clock()));
      }
      expect(fresh(await limiter.consume('alone'))).toEqual(FRESH);
      const batch = await Promise.all(['good', 'batched'].map((id) => limiter.consume(id)));
      expect(batch.map(fresh)).toEqual([FRESH, FRESH]);
      for (const id of ['alone', 'batched', 'good']) {
        expect(await client.lrange(`${keyOf(id)}:p0`, 0, -1)).toEqual([String(clock()), '1']);
        expect(fresh(await limiter.peek(id))).toMatchObject({ reason: undefined, left: LIMIT - 1 });
      }
    });
  }

  it('sliding-window-log: a damaged entry only a refusal reads reads as fresh', async () => {
    const { limiter, clock, keyOf } = limiterOf('log-damaged-deep', 'sliding-window-log', 1);
    for (let i = 0; i < LIMIT; i++) {
      await limiter.consume('e');
      clock.advance(1);
    }
    // The oldest entry's cost: the trim reads only its time, which is in the window, and only
    // the refusal's wait reads its cost.
    await client.lset(`${keyOf('e')}:p0`, 1, 'x');
    expect(fresh(await limiter.consume('e'))).toEqual(FRESH);
    expect(await client.lrange(`${keyOf('e')}:p0`, 0, -1)).toEqual([String(clock()), '1']);
  });

  it('sliding-window-log: a refund over a damaged newest entry gives back nothing and reads as fresh', async () => {
    const { limiter, clock, keyOf } = limiterOf('log-damaged-refund', 'sliding-window-log', 1);
    await limiter.consume('f');
    clock.advance(1);
    await limiter.consume('f');
    await client.lset(`${keyOf('f')}:p0`, -1, 'x');
    await limiter.refund('f', 1);
    expect(await client.exists(`${keyOf('f')}:p0`)).toBe(0);
    expect(fresh(await limiter.consume('f'))).toEqual(FRESH);
  });

  it('sliding-window-log: a list holding more entries than its total has units is counted anew at once', async () => {
    const { limiter, clock, keyOf } = limiterOf('log-extra-entry', 'sliding-window-log', 1);
    expect((await limiter.consume('d')).allowed).toBe(true);
    await client.rpush(`${keyOf('d')}:p0`, clock() + 1000, 1);
    clock.advance(2000);
    const later = [];
    for (let i = 0; i < 3; i++) later.push((await limiter.consume('d')).allowed);
    expect(later).toEqual([true, false, false]);
  });

  it('sliding-window-log: an uncounted entry in the same ms is counted anew, in this window and the next', async () => {
    const { limiter, clock, keyOf } = limiterOf('log-long-list', 'sliding-window-log', 1);
    const first = [(await limiter.consume('c')).allowed];
    // An entry the total never counted, as a call failing after its list write left it.
    await client.rpush(`${keyOf('c')}:p0`, clock(), 1);
    for (let i = 1; i < LIMIT + 1; i++) first.push((await limiter.consume('c')).allowed);
    expect(first).toEqual([true, true, false, false]);
    // A window on, every entry has left: the log starts empty.
    clock.advance(60_000);
    const next = [];
    for (let i = 0; i < LIMIT + 2; i++) next.push((await limiter.consume('c')).allowed);
    expect(next).toEqual([true, true, true, false, false]);
    expect(await client.llen(`${keyOf('c')}:p0`)).toBe(2);
  });
});
