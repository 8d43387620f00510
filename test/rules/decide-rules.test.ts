import { randomUUID } from 'node:crypto';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import {
  type ConsumeOptions,
  createMemoryStore,
  createRuleLimiters,
  type DecisionEvent,
  decideRules,
  type Limiter,
  type RateLimitStore,
  type RefundEvent,
  type RuleVerdict,
  SLUICE_CHANNELS,
  type StoreErrorEvent,
  type StoreRequest,
} from '@sluice/core';
import { createRedisStore } from '@sluice/redis';
import { parseRules } from '@sluice/rules';
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { listen } from '../helpers/channels.js';
import { connectRedis, deleteKeys, standaloneRedis } from '../helpers/redis-env.js';
import { failingStore, promiseStore } from '../helpers/stores.js';

const rules = parseRules(`
domain: app
descriptors:
  - key: user
    rate_limit: { unit: hour, requests_per_unit: 1 }
  - key: route
    rate_limit: { unit: hour, requests_per_unit: 1 }
`);
const now = () => 1_700_000_000_000;
const standalone = await standaloneRedis();

const match = (...descriptors: [string, string][]) =>
  rules.match(
    'app',
    descriptors.map(([key, value]) => [{ key, value }]),
  );

describe('decideRules on the memory store', () => {
  it('gives a refused request its charges back before a request asked in the same turn decides', async () => {
    const limiterOf = createRuleLimiters({ store: createMemoryStore(), clock: now });
    // The route is spent: a request for it and the user is refused and must spend nothing.
    await decideRules(match(['route', '/a']), limiterOf, 1, now);
    const refused = decideRules(match(['user', 'u'], ['route', '/a']), limiterOf, 1, now);
    // Asked before the refused one's promise settles: it must find the user's quota whole.
    const next = decideRules(match(['user', 'u']), limiterOf, 1, now);
    expect((await refused).map((v) => v.decision.allowed)).toEqual([true, false]);
    expect((await next).map((v) => v.decision.allowed)).toEqual([true]);
  });
});

describe('decideRules when the clock moves while the store answers', () => {
  it("gives a refused request's charge back though a window boundary passed since it was made", async () => {
    const counted = parseRules(`
domain: app
descriptors:
  - key: user
    policies: [{ name: per-second, limit: 3, window: 1s, algorithm: sliding-window-counter }]
  - key: route
    rate_limit: { unit: hour, requests_per_unit: 1 }
`);
    const boundary = 1_700_000_001_000;
    let at = boundary - 1;
    const clock = () => at;
    // Every answer comes back a millisecond before a window boundary, and the refund is made
    // after it: the counter's previous window still weighs the charge in full there.
    const inner = promiseStore();
    const store = {
      ...inner,
      consume: (request: StoreRequest) => inner.consume(request).finally(() => (at = boundary)),
    };
    const limiterOf = createRuleLimiters({ store, clock });
    const ask = (...descriptors: [string, string][]) =>
      decideRules(
        counted.match(
          'app',
          descriptors.map(([key, value]) => [{ key, value }]),
        ),
        limiterOf,
        1,
        clock,
      );
    for (let i = 0; i < 2; i++) {
      at = boundary - 1;
      expect((await ask(['user', 'u'])).map((v) => v.decision.allowed)).toEqual([true]);
    }
    at = boundary - 1;
    await ask(['route', '/a']);
    at = boundary - 1;
    const refused = await ask(['user', 'u'], ['route', '/a']);
    expect(refused.map((v) => v.decision.allowed)).toEqual([true, false]);
    // Two of 3 spent in the previous window, weighed in full: one more passes, then none.
    expect((await ask(['user', 'u'])).map((v) => v.decision.allowed)).toEqual([true]);
    expect((await ask(['user', 'u'])).map((v) => v.decision.allowed)).toEqual([false]);
  });
});

describe("decideRules with limiters of the caller's own", () => {
  it('asks a limiter createLimiter did not make through its consume', async () => {
    const made = createRuleLimiters({ store: createMemoryStore(), clock: now });
    const asked: string[] = [];
    const limiterOf = (rule: Parameters<typeof made>[0]): Limiter => {
      const inner = made(rule);
      return {
        ...inner,
        consume: (key: string, options?: ConsumeOptions) => {
          asked.push(key);
          return inner.consume(key, options);
        },
      };
    };
    const verdicts = await decideRules(match(['user', 'u']), limiterOf, 1, now);
    expect(verdicts.map((v) => v.decision.allowed)).toEqual([true]);
    expect(asked).toHaveLength(1);
    const again = await decideRules(match(['user', 'u']), limiterOf, 1, now);
    expect(again.map((v) => v.decision.allowed)).toEqual([false]);
  });
});

describe('decideRules in one store call', () => {
  it("reports a failed call through every rule's limiter, as each would alone, and the outage once", async () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
    const store = { ...failingStore(refused), consumeAll: () => Promise.reject(refused) };
    const warnings: string[] = [];
    const logger = { warn: (message: string) => warnings.push(message) };
    const limiterOf = createRuleLimiters({ store, clock: now, logger, onStoreError: 'deny' });
    const failures: StoreErrorEvent[] = [];
    const listener = (event: unknown) => failures.push(event as StoreErrorEvent);
    subscribe(SLUICE_CHANNELS.storeError, listener);
    try {
      const verdicts = await decideRules(match(['user', 'u'], ['route', '/a']), limiterOf, 1, now);
      expect(verdicts.map((v) => [v.decision.allowed, v.decision.reason])).toEqual([
        [false, 'store-unavailable'],
        [false, 'store-unavailable'],
      ]);
      // One failure for each rule's limiter, named by its own namespace.
      expect(failures).toHaveLength(2);
      expect(new Set(failures.map((f) => f.limiter)).size).toBe(2);
      // The outage is the store's: told once, however many rules met it.
      expect(warnings.filter((w) => w.includes('WRN_SLUICE_STORE_UNAVAILABLE'))).toHaveLength(1);
    } finally {
      unsubscribe(SLUICE_CHANNELS.storeError, listener);
    }
  });

  const outcome = { allowed: true, remaining: 0, resetAfterMs: 1000, retryAfterMs: 0, delayMs: 0 };
  const reply = { allowed: true, now: now(), outcomes: [outcome] };
  it.each([
    ['one reply for two requests', [reply], /1 replies instead of 2 replies/],
    ['no list', { replies: [reply, reply] }, /an object instead of 2 replies/],
    ['a NaN figure', [reply, { ...reply, outcomes: [{ ...outcome, remaining: Number.NaN }] }], /`remaining` NaN/],
  ])("a reply list with %s is a store failure under each rule's fail policy", async (_label, replies, why) => {
    const store = { ...failingStore(new Error('unused')), consumeAll: async () => replies as never };
    const limiterOf = createRuleLimiters({ store, clock: now, logger: { warn: () => {} }, onStoreError: 'deny' });
    const failures: StoreErrorEvent[] = [];
    const listener = (event: unknown) => failures.push(event as StoreErrorEvent);
    subscribe(SLUICE_CHANNELS.storeError, listener);
    try {
      const verdicts = await decideRules(match(['user', 'u'], ['route', '/a']), limiterOf, 1, now);
      expect(verdicts.map((v) => v.decision.reason)).toEqual(['store-unavailable', 'store-unavailable']);
      expect(failures.map((f) => f.errorType)).toEqual(['ERR_SLUICE_BAD_STORE_REPLY', 'ERR_SLUICE_BAD_STORE_REPLY']);
      expect(String(failures[0]?.error)).toMatch(why);
    } finally {
      unsubscribe(SLUICE_CHANNELS.storeError, listener);
    }
  });
});

// A call that outlived storeTimeoutMs was refused under 'deny', and its late answer charged
// every rule: nothing gave it back.
describe('decideRules in one store call answered after the timeout', () => {
  const allowed = { allowed: true, remaining: 0, resetAfterMs: 1000, retryAfterMs: 0, delayMs: 0 };
  const refusedOutcome = { ...allowed, allowed: false, retryAfterMs: 1000 };
  /** A store whose one call answers `replies` 60 ms late, noting the refunds asked of it. */
  const lateStore = (replies: unknown) => {
    const refunds: string[] = [];
    const store: RateLimitStore = {
      name: 'late',
      consume: () => Promise.reject(new Error('unused')),
      consumeAll: () => new Promise((resolve) => setTimeout(() => resolve(replies as never), 60)),
      reset: async () => {},
      refund: async (request) => {
        refunds.push(`${request.namespace} ${request.cost}`);
      },
    };
    return { store, refunds };
  };
  const decideLate = async (replies: unknown) => {
    const { store, refunds } = lateStore(replies);
    const limiterOf = createRuleLimiters({
      store,
      clock: now,
      logger: { warn() {} },
      onStoreError: 'deny',
      storeTimeoutMs: 20,
    });
    const decided = decideRules(match(['user', 'u'], ['route', '/a']), limiterOf, 2, now);
    await vi.advanceTimersByTimeAsync(20);
    const verdicts = await decided;
    expect(verdicts.map((v) => v.decision.reason)).toEqual(['store-unavailable', 'store-unavailable']);
    // The late answer lands, and each rule's refund follows it.
    await vi.advanceTimersByTimeAsync(100);
    return refunds;
  };
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });
  const reply = (outcome: typeof allowed) => ({ allowed: outcome.allowed, now: now(), outcomes: [outcome] });

  it('gives back what it charged, one refund a rule, when every rule was allowed', async () => {
    const refunds = await decideLate([reply(allowed), reply(allowed)]);
    expect(refunds).toHaveLength(2);
    expect(new Set(refunds).size).toBe(2);
    // Each whole: the call charged each rule the request's cost.
    expect(refunds.every((refund) => refund.endsWith(' 2'))).toBe(true);
  });

  it('gives back nothing when a rule refused: the call charged none', async () => {
    expect(await decideLate([reply(allowed), reply(refusedOutcome)])).toEqual([]);
  });

  it('drops a late answer that is no list, leaking nothing', async () => {
    expect(await decideLate(null)).toEqual([]);
  });
});

describe("decideRules when one rule's store call fails under onStoreError 'throw'", () => {
  const queued = parseRules(`
domain: app
descriptors:
  - key: user
    policies:
      - { name: burst, limit: 1, window: 1h, algorithm: gcra, queue: { maxDelayMs: 2h } }
  - key: route
    rate_limit: { unit: hour, requests_per_unit: 5 }
`);
  const both = () => queued.match('app', [[{ key: 'user', value: 'u' }], [{ key: 'route', value: '/a' }]]);
  const userAlone = () => queued.match('app', [[{ key: 'user', value: 'u' }]]);
  const down = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
  /** Answers through promises, as a remote store does; the route rule's calls fail. */
  const routeDown = () => {
    const inner = promiseStore();
    const routeRule = both()[1]?.rule.id;
    return {
      ...inner,
      consume: (request: StoreRequest) =>
        request.namespace === routeRule ? Promise.reject(down) : inner.consume(request),
    };
  };

  it('rejects with the failure and gives back what the other rules charged', async () => {
    const limiterOf = createRuleLimiters({ store: routeDown(), clock: now, onStoreError: 'throw' });
    await expect(decideRules(both(), limiterOf, 1, now)).rejects.toMatchObject({
      code: 'ERR_SLUICE_STORE_UNAVAILABLE',
      cause: down,
    });
    // The user's one unit was given back: alone, the user passes without waiting.
    const [alone] = await decideRules(userAlone(), limiterOf, 1, now);
    expect(alone?.decision).toMatchObject({ allowed: true, delayMs: 0 });
  });

  it('publishes the queued rule it held back, since no queue will hold the request', async () => {
    const limiterOf = createRuleLimiters({ store: routeDown(), clock: now, onStoreError: 'throw' });
    await decideRules(userAlone(), limiterOf, 1, now, true);
    const events = listen<DecisionEvent>(SLUICE_CHANNELS.decision);
    await expect(decideRules(both(), limiterOf, 1, now, true)).rejects.toMatchObject({
      code: 'ERR_SLUICE_STORE_UNAVAILABLE',
      cause: down,
    });
    expect(events.map((e) => e.result)).toEqual(['queued']);
  });
});

describe('decideRules with a rule that blocks every request', () => {
  const blocking = parseRules(`
domain: app
descriptors:
  - key: route
    value: /closed
    rate_limit: { unit: minute, requests_per_unit: 0 }
  - key: route
    value: /watched
    rate_limit: { unit: minute, requests_per_unit: 0 }
    shadow_mode: true
  - key: user
    rate_limit: { unit: hour, requests_per_unit: 5 }
`);
  const ask = (route: string) =>
    blocking.match('app', [[{ key: 'route', value: route }], [{ key: 'user', value: 'u' }]]);

  it("publishes the blocked rule's refusal under its id, as each rule's decision is, with no store asked", async () => {
    const limiterOf = createRuleLimiters({ store: createMemoryStore(), clock: now });
    const events = listen<DecisionEvent>(SLUICE_CHANNELS.decision);
    const closed = await decideRules(ask('/closed'), limiterOf, 1, now);
    const watched = await decideRules(ask('/watched'), limiterOf, 1, now);
    const [closedRule, watchedRule] = [closed[0]?.rule.id, watched[0]?.rule.id];
    expect(events.map((e) => [e.limiter, e.store, e.policy, e.result])).toEqual([
      [closedRule, 'none', 'blocked', 'limited'],
      [expect.any(String), 'memory', 'per-hour', 'allowed'],
      [watchedRule, 'none', 'blocked', 'shadow'],
      [expect.any(String), 'memory', 'per-hour', 'allowed'],
    ]);
    // Each blocked rule's events carry a policy list of its own, as each limiter's do.
    expect(events[0]?.policies).toEqual([]);
    expect(events[0]?.policies).not.toBe(events[2]?.policies);
  });
});

describe.skipIf(standalone.skip)('decideRules in one Redis call, refused by one rule', () => {
  const prefix = `sluice-test:${randomUUID()}:`;
  let client: Redis;
  beforeAll(async () => {
    client = await connectRedis(standalone.require());
  });
  afterAll(async () => {
    if (client === undefined) return;
    await deleteKeys(client, prefix);
    client.disconnect();
  });

  /** The results and refunds a request publishes once its user's quota is spent. */
  async function refusedRequestEvents(store: RateLimitStore) {
    const limiterOf = createRuleLimiters({ store, clock: now, onStoreError: 'throw', storeTimeoutMs: 10_000 });
    await decideRules(match(['user', 'u']), limiterOf, 1, now);
    const decisions = listen<DecisionEvent>(SLUICE_CHANNELS.decision);
    const refunds = listen<RefundEvent>(SLUICE_CHANNELS.refund);
    const verdicts = await decideRules(match(['user', 'u'], ['route', '/a']), limiterOf, 1, now);
    const route = verdicts[1] as RuleVerdict;
    return {
      results: decisions.map((e) => e.result),
      refunds: refunds.map((e) => [e.limiter === route.limiter?.namespace, e.cost]),
      routeRemaining: (await (route.limiter as Limiter).peek(route.key)).remaining,
    };
  }

  // Deciding apart (memory), the route's rule charges and is refunded; in one Redis call it is
  // never charged. Its allowed decision less its refunds must count nothing on either store.
  it('publishes the rule that allowed as given back, as rules deciding apart do on the memory store', async () => {
    const expected = { results: ['limited', 'allowed'], refunds: [[true, 1]], routeRemaining: 1 };
    expect(await refusedRequestEvents(createMemoryStore())).toEqual(expected);
    expect(await refusedRequestEvents(createRedisStore({ client, prefix }))).toEqual(expected);
  });
});
