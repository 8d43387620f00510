import { isSluiceError } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import { type Asked, parseReplies } from '../../packages/redis/src/reply.js';

const onRedisClock = (policyCount: number): Asked => ({ policyCount, now: undefined });

describe('script replies', () => {
  it("reads the documented shape: Redis's now, then per policy allowed, remaining, reset and the wait", () => {
    const batch = [1_700_000_000_000, 1, 4, 100, 0, 0, 0, 250, 250, 1, 7, 30, 2];
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

  it.each([
    ['not an array', 'OK', [onRedisClock(1)]],
    ['null', null, [onRedisClock(1)]],
    ['too short', [5, 1, 0, 0], [onRedisClock(1)]],
    ['too long', [5, 1, 0, 0, 0, 9], [onRedisClock(1)]],
    ['a string in it', [5, 1, '0', 0, 0], [onRedisClock(1)]],
    ['a fraction', [5, 1, 0.5, 0, 0], [onRedisClock(1)]],
    ['a negative', [5, 1, -1, 0, 0], [onRedisClock(1)]],
    ['a flag that is not 0 or 1', [5, 2, 0, 0, 0], [onRedisClock(1)]],
    ['beyond 2^53', [5, 1, 2 ** 53, 0, 0], [onRedisClock(1)]],
    ["no clock for a decision on Redis's clock", [0, 1, 0, 0, 0], [onRedisClock(1)]],
    ['a bad second decision', [5, 1, 0, 0, 0, 3, 0, 0, 0], [onRedisClock(1), onRedisClock(1)]],
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
