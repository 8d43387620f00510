import { isSluiceError } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import { type Asked, parseReplies } from '../../packages/redis/src/reply.js';

const onRedisClock = (policyCount: number): Asked => ({ policyCount, now: undefined });

/** What the script sends: the numbers as little-endian doubles, back to back in one string. */
function packed(numbers: readonly number[]): Buffer {
  const buffer = Buffer.alloc(8 * numbers.length);
  for (const [i, n] of numbers.entries()) buffer.writeDoubleLE(n, 8 * i);
  return buffer;
}

describe('script replies', () => {
  it("reads the documented shape: Redis's now, then per policy remaining, reset and the wait signed by the outcome", () => {
    // Allowed with no delay, refused with a retry of 250 (-1 - 250), allowed with a delay of 2.
    const batch = packed([1_700_000_000_000, 4, 100, 0, 0, 250, -251, 7, 30, 2]);
    expect(parseReplies(batch, [onRedisClock(2), { policyCount: 1, now: 1_600_000_000_000 }])).toEqual([
      {
        allowed: false,
        now: 1_700_000_000_000,
        outcomes: [
          { allowed: true, remaining: 4, resetAfterMs: 100, retryAfterMs: 0, delayMs: 0 },
          { allowed: false, remaining: 0, resetAfterMs: 250, retryAfterMs: 250, delayMs: 0 },
        ],
      },
      {
        allowed: true,
        now: 1_600_000_000_000,
        outcomes: [{ allowed: true, remaining: 7, resetAfterMs: 30, retryAfterMs: 0, delayMs: 2 }],
      },
    ]);
  });

  it('reads a refusal whose wait passes 2^53, as a cost far above a bucket’s capacity gets', () => {
    const [reply] = parseReplies(packed([1_700_000_000_000, 10, 0, -(2 ** 56)]), [onRedisClock(1)]);
    expect(reply?.outcomes).toEqual([
      { allowed: false, remaining: 10, resetAfterMs: 0, retryAfterMs: 2 ** 56, delayMs: 0 },
    ]);
  });

  it('reads a reply wherever it sits in a larger buffer, as a client slices one from what it read', () => {
    const numbers = [1_700_000_000_000, 4, 100, 0];
    for (const offset of [1, 3, 5, 8]) {
      const reply = Buffer.concat([Buffer.alloc(offset, 0xff), packed(numbers), Buffer.alloc(5, 0xff)]).subarray(
        offset,
        offset + 8 * numbers.length,
      );
      expect(parseReplies(reply, [onRedisClock(1)])).toEqual([
        {
          allowed: true,
          now: 1_700_000_000_000,
          outcomes: [{ allowed: true, remaining: 4, resetAfterMs: 100, retryAfterMs: 0, delayMs: 0 }],
        },
      ]);
    }
  });

  it('reads a reply longer than any before it, and a shorter one after it', () => {
    // 32 decisions of 4 policies: 385 numbers, each decision's remaining its own index.
    const numbers = [1_700_000_000_000];
    for (let d = 0; d < 32; d++) for (let p = 0; p < 4; p++) numbers.push(4 * d + p, 100, 0);
    const replies = parseReplies(
      packed(numbers),
      Array.from({ length: 32 }, () => onRedisClock(4)),
    );
    expect(replies.flatMap((r) => r.outcomes.map((o) => o.remaining))).toEqual(
      Array.from({ length: 128 }, (_, i) => i),
    );
    expect(parseReplies(packed([5, 0, 9, -10]), [onRedisClock(1)])).toEqual([
      {
        allowed: false,
        now: 5,
        outcomes: [{ allowed: false, remaining: 0, resetAfterMs: 9, retryAfterMs: 9, delayMs: 0 }],
      },
    ]);
  });

  it('reads a wait of -1 as a refusal with no retry, not as an allowed outcome', () => {
    expect(parseReplies(packed([5, 0, 9, -1]), [onRedisClock(1)])).toEqual([
      {
        allowed: false,
        now: 5,
        outcomes: [{ allowed: false, remaining: 0, resetAfterMs: 9, retryAfterMs: 0, delayMs: 0 }],
      },
    ]);
  });

  it.each([
    ['numbers in an array, not packed', [5, 0, 0, 0], [onRedisClock(1)]],
    ['a text', 'OK', [onRedisClock(1)]],
    ['null', null, [onRedisClock(1)]],
    ['too short', packed([5, 0, 0]), [onRedisClock(1)]],
    ['too long', packed([5, 0, 0, 0, 9]), [onRedisClock(1)]],
    ['a ragged length', Buffer.concat([packed([5, 0, 0, 0]), Buffer.from([0])]), [onRedisClock(1)]],
    ['a fraction', packed([5, 0.5, 0, 0]), [onRedisClock(1)]],
    ['a fraction in the wait', packed([5, 0, 0, -1.5]), [onRedisClock(1)]],
    ['a negative remaining', packed([5, -1, 0, 0]), [onRedisClock(1)]],
    ['a negative reset', packed([5, 0, -1, 0]), [onRedisClock(1)]],
    ['not a number', packed([5, Number.NaN, 0, 0]), [onRedisClock(1)]],
    ['a wait that is not a number', packed([5, 0, 0, Number.NaN]), [onRedisClock(1)]],
    ['beyond 2^53', packed([5, 2 ** 53, 0, 0]), [onRedisClock(1)]],
    ['a wait that is no whole number', packed([5, 0, 0, -1.5]), [onRedisClock(1)]],
    ['an infinite wait', packed([5, 0, 0, Number.NEGATIVE_INFINITY]), [onRedisClock(1)]],
    ["no clock for a decision on Redis's clock", packed([0, 0, 0, 0]), [onRedisClock(1)]],
    ['a bad second decision', packed([5, 0, 0, 0, -3, 0, 0]), [onRedisClock(1), onRedisClock(1)]],
  ] as [string, unknown, Asked[]][])('refuses a reply with %s as ERR_SLUICE_BAD_STORE_REPLY', (_, raw, asked) => {
    let caught: unknown;
    try {
      parseReplies(raw, asked);
    } catch (error) {
      caught = error;
    }
    expect(isSluiceError(caught) && caught.code).toBe('ERR_SLUICE_BAD_STORE_REPLY');
  });
});
