import { isSluiceError } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import { parseReply } from '../../packages/redis/src/reply.js';

describe('script replies', () => {
  it('reads the documented shape: the decision, now, then five integers per policy', () => {
    expect(parseReply([0, 1_700_000_000_000, 1, 4, 100, 0, 0, 0, 0, 250, 250, 0], 2)).toEqual({
      allowed: false,
      now: 1_700_000_000_000,
      outcomes: [
        { allowed: true, remaining: 4, resetAfterMs: 100, retryAfterMs: 0, delayMs: 0 },
        { allowed: false, remaining: 0, resetAfterMs: 250, retryAfterMs: 250, delayMs: 0 },
      ],
    });
  });

  it.each([
    ['not an array', 'OK'],
    ['null', null],
    ['too short', [1, 5, 1, 0, 0, 0]],
    ['too long', [1, 5, 1, 0, 0, 0, 0, 9]],
    ['a string in it', [1, 5, 1, '0', 0, 0, 0]],
    ['a fraction', [1, 5, 1, 0.5, 0, 0, 0]],
    ['a negative', [1, 5, 1, -1, 0, 0, 0]],
    ['a flag that is not 0 or 1', [2, 5, 2, 0, 0, 0, 0]],
    ['allowed though a policy refused', [1, 5, 0, 0, 0, 9, 0]],
    ['refused though every policy allowed', [0, 5, 1, 0, 0, 0, 0]],
    ['beyond 2^53', [1, 2 ** 53, 1, 0, 0, 0, 0]],
  ])('refuses a reply with %s as ERR_SLUICE_BAD_STORE_REPLY', (_, raw) => {
    let caught: unknown;
    try {
      parseReply(raw, 1);
    } catch (error) {
      caught = error;
    }
    expect(isSluiceError(caught) && caught.code).toBe('ERR_SLUICE_BAD_STORE_REPLY');
  });
});
