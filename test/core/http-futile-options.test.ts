import { createHttpLimiter, isSluiceError } from '@sluice/core';
import { createMemoryStore } from '@sluice/memory';
import { parseRules } from '@sluice/rules';
import { describe, expect, it } from 'vitest';
import { type FakeRequest, fakeBinding } from '../adapters/unit/fake-binding.js';
import { manualClock } from '../helpers/clock.js';

const binding = fakeBinding<FakeRequest>();

// The options under test are deliberately outside the option types.
const make = (options: Record<string, unknown>) =>
  createHttpLimiter<FakeRequest, Record<string, string>>({ store: createMemoryStore(), ...options } as never, binding);

function thrownBy(options: Record<string, unknown>): { code: string; message: string } {
  try {
    make(options);
  } catch (error) {
    expect(isSluiceError(error)).toBe(true);
    return error as { code: string; message: string };
  }
  throw new Error('accepted');
}

const gcraQueued = { algorithm: 'gcra', queue: { maxDelayMs: '5s' } } as const;

describe('a fixed cost no fixed policy can ever grant', () => {
  // Accepted at start-up, then every request was refused as one that "can never pass".
  it('is refused at start-up, naming `cost`, the value and the policy', () => {
    const error = thrownBy({ limit: 5, window: '1m', cost: 6 });
    expect(error.code).toBe('ERR_SLUICE_INVALID_COST');
    expect(error.message).toContain('`cost`');
    expect(error.message).toContain('received 6');
    expect(error.message).toContain('"5-per-1m"');
    expect(error.message).toContain('capacity 5');
    const several = thrownBy({
      policies: [
        { name: 'burst', limit: 3, window: '1s' },
        { name: 'daily', limit: 1000, window: '1d' },
      ],
      cost: 4,
    });
    expect(several.code).toBe('ERR_SLUICE_INVALID_COST');
    expect(several.message).toContain('"burst"');
  });

  it('is refused against the largest capacity soft or elastic mode lends, and the burst', () => {
    expect(thrownBy({ limit: 10, window: '1m', cost: 12, throttle: { mode: 'soft', overagePercent: 10 } }).code).toBe(
      'ERR_SLUICE_INVALID_COST',
    );
    expect(() =>
      make({ limit: 10, window: '1m', cost: 11, throttle: { mode: 'soft', overagePercent: 10 } }),
    ).not.toThrow();
    const elastic = { mode: 'elastic', maxOveragePercent: 50, load: () => 1 };
    expect(() => make({ limit: 10, window: '1m', cost: 15, throttle: elastic })).not.toThrow();
    expect(thrownBy({ limit: 10, window: '1m', cost: 16, throttle: elastic }).code).toBe('ERR_SLUICE_INVALID_COST');
    expect(() => make({ limit: 10, window: '1m', algorithm: 'token-bucket', burst: 20, cost: 20 })).not.toThrow();
  });

  it('is accepted where such a request can still pass, or where no request is ever refused', () => {
    // A queue books a cost beyond the burst into later slots.
    expect(() => make({ limit: 2, window: '2s', ...gcraQueued, cost: 3 })).not.toThrow();
    expect(() => make({ limit: 5, window: '1m', cost: 6, throttle: { mode: 'shadow' } })).not.toThrow();
  });

  it('is left to each request when the cost or the policies are known only per request', async () => {
    const clock = manualClock();
    const costFn = make({ limit: 5, window: '1m', cost: () => 6, clock });
    const tiered = make({ policies: () => [{ limit: 5, window: '1m' }], cost: 6, clock });
    const limitFn = make({ limit: () => 5, window: '1m', cost: 6, clock });
    for (const limiter of [costFn, tiered, limitFn]) {
      const outcome = await limiter.handle({ ip: '192.0.2.1', headers: {} }, {});
      expect(outcome.decision?.reason).toBe('cost-exceeds-limit');
    }
  });

  it('leaves no namespace claimed when refused, so the corrected options start', () => {
    const store = createMemoryStore();
    expect(() => make({ limit: 5, window: '1m', cost: 6, store })).toThrow();
    expect(() => make({ limit: 5, window: '1m', cost: 5, store })).not.toThrow();
  });
});

describe('maxQueued with no policy in queue mode', () => {
  // Accepted, it bounded nothing: the queue it was meant for had been left out.
  it('is refused at start-up, naming `maxQueued`, the value and the missing `queue`', () => {
    const error = thrownBy({ limit: 5, window: '1m', maxQueued: 5 });
    expect(error.code).toBe('ERR_SLUICE_INVALID_QUEUE');
    expect(error.message).toContain('`maxQueued`');
    expect(error.message).toContain('received 5');
    expect(error.message).toContain('`queue`');
    const policies = [{ name: 'a', limit: 5, window: '1m', algorithm: 'gcra' }];
    expect(thrownBy({ policies, maxQueued: 5 }).code).toBe('ERR_SLUICE_INVALID_QUEUE');
  });

  it('is accepted when a policy has a queue, or the policies are known only per request', () => {
    expect(() => make({ limit: 2, window: '2s', ...gcraQueued, maxQueued: 5 })).not.toThrow();
    const policies = [
      { name: 'a', limit: 100, window: '1h' },
      { name: 'b', limit: 2, window: '2s', ...gcraQueued },
    ];
    expect(() => make({ policies, maxQueued: 5 })).not.toThrow();
    expect(() => make({ limit: () => 2, window: '2s', ...gcraQueued, maxQueued: 5 })).not.toThrow();
    expect(() => make({ policies: () => [{ limit: 5, window: '1m' }], maxQueued: 5 })).not.toThrow();
    // Rules are reloaded: a rule with a queue may come later.
    const rules = parseRules(
      'domain: api\ndescriptors:\n  - key: remote_address\n    rate_limit: { unit: second, requests_per_unit: 1 }\n',
    );
    expect(() => make({ rules, maxQueued: 5 })).not.toThrow();
  });
});
