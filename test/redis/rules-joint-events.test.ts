import { randomUUID } from 'node:crypto';
import {
  createMemoryStore,
  createRuleLimiters,
  type DecisionEvent,
  decideRules,
  type Limiter,
  type RateLimitStore,
  type RefundEvent,
  type RuleVerdict,
  SLUICE_CHANNELS,
} from '@sluice/core';
import { createRedisStore } from '@sluice/redis';
import { parseRules } from '@sluice/rules';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listen } from '../helpers/channels.js';
import { connectRedis, deleteKeys, standaloneRedis } from '../helpers/redis-env.js';

const target = await standaloneRedis();
const now = () => 1_700_000_000_000;
const rules = parseRules(`
domain: app
descriptors:
  - key: user
    rate_limit: { unit: hour, requests_per_unit: 1 }
  - key: route
    rate_limit: { unit: hour, requests_per_unit: 5 }
`);
const match = (...descriptors: [string, string][]) =>
  rules.match(
    'app',
    descriptors.map(([key, value]) => [{ key, value }]),
  );

/** The results and refunds a refused request publishes once its user's quota is spent. */
async function refusedRequestEvents(store: RateLimitStore) {
  const limiterOf = createRuleLimiters({ store, clock: now, onStoreError: 'throw', storeTimeoutMs: 10_000 });
  await decideRules(match(['user', 'u']), limiterOf, 1, now);
  const decisions = listen<DecisionEvent>(SLUICE_CHANNELS.decision);
  const refunds = listen<RefundEvent>(SLUICE_CHANNELS.refund);
  const verdicts = await decideRules(match(['user', 'u'], ['route', '/a']), limiterOf, 1, now);
  const routeVerdict = verdicts[1] as RuleVerdict;
  const route = await (routeVerdict.limiter as Limiter).peek(routeVerdict.key);
  return {
    results: decisions.map((e) => e.result),
    refunds: refunds.map((e) => [e.limiter === routeVerdict.limiter?.namespace, e.cost]),
    routeRemaining: route.remaining,
  };
}

describe.skipIf(target.skip)('rules decided in one Redis call, refused by one of them', () => {
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

  // Deciding apart (memory), the route's rule charges and is refunded; in one Redis call it is
  // never charged. Its allowed decision less its refunds must count nothing on either store.
  it('publish the allowed rule as given back, as rules deciding apart do on the memory store', async () => {
    const expected = { results: ['limited', 'allowed'], refunds: [[true, 1]], routeRemaining: 5 };
    expect(await refusedRequestEvents(createMemoryStore())).toEqual(expected);
    expect(await refusedRequestEvents(createRedisStore({ client, prefix }))).toEqual(expected);
  });
});
