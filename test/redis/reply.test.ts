import { isSluiceError } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import { parseReplies } from '../../packages/redis/src/reply.js';

describe('script replies', () => {
  it('reads the documented shape: per decision the decision, now, then five integers per policy', () => {
    const batch = [0, 1_700_000_000_000, 1, 4, 100, 0, 0, 0, 0, 250, 250, 0, 1, 1_700_000_000_001, 1, 7, 30, 0, 2];
    expect(parseReplies(batch, [2, 1])).toEqual([
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
        now: 1_700_000_000_001,
        outcomes: [{ allowed: true, remaining: 7, resetAfterMs: 30, retryAfterMs: 0, delayMs: 2 }],
      },
    ]);
  });

  it.each([
    ['not an array', 'OK', [1]],
    ['null', null, [1]],
    ['too short', [1, 5, 1, 0, 0, 0], [1]],
    ['too long', [1, 5, 1, 0, 0, 0, 0, 9], [1]],
    ['a string in it', [1, 5, 1, '0', 0, 0, 0], [1]],
    ['a fraction', [1, 5, 1, 0.5, 0, 0, 0], [1]],
    ['a negative', [1, 5, 1, -1, 0, 0, 0], [1]],
    ['a flag that is not 0 or 1', [2, 5, 2, 0, 0, 0, 0], [1]],
    ['allowed though a policy refused', [1, 5, 0, 0, 0, 9, 0], [1]],
    ['refused though every policy allowed', [0, 5, 1, 0, 0, 0, 0], [1]],
    ['beyond 2^53', [1, 2 ** 53, 1, 0, 0, 0, 0], [1]],
    ['a bad second decision', [1, 5, 1, 0, 0, 0, 0, 1, 5, 0, 0, 0, 0, 0], [1, 1]],
  ] as [string, unknown, number[]][])('refuses a reply with %s as ERR_SLUICE_BAD_STORE_REPLY', (_, raw, counts) => {
    let caught: unknown;
    try {
      parseReplies(raw, counts);
    } catch (error) {
      caught = error;
    }
    expect(isSluiceError(caught) && caught.code).toBe('ERR_SLUICE_BAD_STORE_REPLY');
  });
});
