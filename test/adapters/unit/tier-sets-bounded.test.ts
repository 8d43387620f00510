import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { createHttpLimiter, toPolicy } from '@sluice/core';
import { createMemoryStore } from '@sluice/memory';
import { describe, expect, it } from 'vitest';
import { clockAt } from '../helpers.js';
import { type FakeRequest, fakeBinding } from './fake-binding.js';

setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

interface TierRequest extends FakeRequest {
  limit: number;
}

const binding = fakeBinding<TierRequest>();

const heapAfterGc = () => {
  collectGarbage();
  return process.memoryUsage().heapUsed;
};

const MB = 1024 * 1024;

// 40k distinct `policies(req)` results used to grow the heap by about 235 B each, without
// bound: every tier's namespace stayed claimed on the store, and the memory store kept an id
// per namespace, refusing any after 2^20.
describe('per-request policy sets are bounded', () => {
  it('through the HTTP layer: 40k more distinct sets leave the heap where it was', async () => {
    const store = createMemoryStore({ maxKeys: 1000 });
    const limiter = createHttpLimiter<TierRequest, Record<string, string>>(
      { policies: (req) => [{ limit: req.limit, window: '1m' }], store, clock: clockAt(0) },
      binding,
    );
    const run = async (from: number, to: number) => {
      for (let limit = from; limit < to; limit++) {
        const outcome = await limiter.handle({ ip: `10.0.${limit % 250}.1`, limit, headers: {} }, {});
        if (outcome.action !== 'next') throw new Error(`set ${limit} was not allowed`);
      }
    };
    await run(1, 10_001);
    const warm = heapAfterGc();
    await run(10_001, 50_001);
    // At 235 B a set this would be 9.4 MB.
    expect(heapAfterGc() - warm).toBeLessThan(3 * MB);
    expect(store.size).toBeLessThanOrEqual(1000);
  }, 120_000);

  it('in the memory store: 1.1M distinct namespaces and policy sets, past the old 2^20 refusal', () => {
    const store = createMemoryStore({ maxKeys: 1000 });
    const decide = (n: number) => {
      const policies = [toPolicy({ name: 'tier', limit: (n % 1000) + 1, window: 60_000 }, 'policies[0]')];
      const reply = store.consumeSync({
        namespace: `tier-${n}`,
        key: `k${n % 500}`,
        policies,
        capacities: [policies[0]?.capacity as number],
        cost: 1,
        now: 0,
      });
      if (!reply.allowed) throw new Error(`set ${n} was refused`);
    };
    for (let n = 0; n < 100_000; n++) decide(n);
    const warm = heapAfterGc();
    for (let n = 100_000; n < 1_100_000; n++) decide(n);
    expect(heapAfterGc() - warm).toBeLessThan(8 * MB);
    expect(store.size).toBeLessThanOrEqual(1000);
  }, 120_000);
});
