import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import {
  createLimiter,
  createUnpublishedLimiter,
  type DecisionEvent,
  hold,
  publishRulesReload,
  type QueueEvent,
  type RateLimitStore,
  type RulesReloadEvent,
  SLUICE_CHANNELS,
  type StoreErrorEvent,
} from '@sluice/core';
import { rateLimit } from '@sluice/express';
import { createMemoryStore } from '@sluice/memory';
import express from 'express';
import request from 'supertest';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { listen } from '../helpers/channels.js';
import { failingStore, promiseStore } from '../helpers/stores.js';

afterEach(() => {
  vi.useRealTimers();
});

const quiet = { warn: () => {} };

describe('sluice:decision', () => {
  it.each([
    ['memory', () => createMemoryStore()],
    ['remote', () => promiseStore()],
  ])('publishes one event per consume on the %s path, naming limiter, policy and result', async (store, makeStore) => {
    const events = listen<DecisionEvent>(SLUICE_CHANNELS.decision);
    const limiter = createLimiter({
      name: 'api',
      limit: 2,
      window: '1m',
      store: makeStore(),
      prefix: 'login',
      clock: () => 0,
    });
    await limiter.consume('client-a');
    await limiter.consume('client-a', { cost: 1 });
    await limiter.consume('client-a');
    expect(events.map((e) => [e.limiter, e.store, e.policy, e.result, e.cost])).toEqual([
      ['login', store, 'api', 'allowed', 1],
      ['login', store, 'api', 'allowed', 1],
      ['login', store, 'api', 'limited', 1],
    ]);
    const last = events[2] as DecisionEvent;
    expect(last.decision.key).toBe('client-a');
    expect(last.decision.allowed).toBe(false);
    expect(last.policies).toBe(limiter.policies);
    // Only a store that answers with a promise is timed.
    if (store === 'remote') expect(last.storeDurationMs).toBeGreaterThanOrEqual(0);
    else expect(last.storeDurationMs).toBeUndefined();
    expect(last.errorType).toBeUndefined();
    // The payload is what the type says and nothing more: no request, no address, no headers.
    expect(Object.keys(last).sort()).toEqual(
      ['cost', 'decision', 'errorType', 'limiter', 'policies', 'policy', 'result', 'store', 'storeDurationMs'].sort(),
    );
  });

  it('publishes a decision taken on the HTTP fast path once', async () => {
    const events = listen<DecisionEvent>(SLUICE_CHANNELS.decision);
    const app = express().use(rateLimit({ limit: 1, window: '1m', store: createMemoryStore(), prefix: 'web' }));
    app.get('/', (_req, res) => res.send('ok'));
    await request(app).get('/').expect(200);
    await request(app).get('/').expect(429);
    expect(events.map((e) => [e.limiter, e.result, e.decision.key])).toEqual([
      ['web', 'allowed', '127.0.0.1'],
      ['web', 'limited', '127.0.0.1'],
    ]);
  });

  // The ban's own counts were published as decisions: each strike and each ban's start an
  // `allowed` one (4 allowed where 1 request passed), and the requests the ban refused none.
  it("publishes a ban's refusals under the ban's limiter, and none of its bookkeeping", async () => {
    const events = listen<DecisionEvent>(SLUICE_CHANNELS.decision);
    const app = express().use(
      rateLimit({
        limit: 1,
        window: '1m',
        store: createMemoryStore(),
        prefix: 'b',
        ban: { after: 1, duration: '10m' },
      }),
    );
    app.get('/', (_req, res) => res.send('ok'));
    const statuses = [];
    for (let i = 0; i < 6; i++) statuses.push((await request(app).get('/')).status);
    expect(statuses).toEqual([200, 429, 403, 403, 403, 403]);
    // The third request's refusal starts the ban: the limiter refused it, then the ban did.
    expect(events.map((e) => [e.limiter, e.store, e.policy, e.result, e.decision.reason])).toEqual([
      ['b', 'memory', '1-per-1m', 'allowed', undefined],
      ['b', 'memory', '1-per-1m', 'limited', undefined],
      ['b', 'memory', '1-per-1m', 'limited', undefined],
      ...Array.from({ length: 3 }, () => ['b.bd', 'memory', 'ban', 'limited', 'banned']),
    ]);
  });

  it('names the policy that refused among several', async () => {
    const events = listen<DecisionEvent>(SLUICE_CHANNELS.decision);
    const limiter = createLimiter({
      policies: [
        { name: 'burst', limit: 100, window: '1s' },
        { name: 'daily', limit: 1, window: '1d' },
      ],
      store: createMemoryStore(),
      clock: () => 0,
    });
    await limiter.consume('k');
    await limiter.consume('k');
    expect(events.map((e) => [e.policy, e.result])).toEqual([
      ['daily', 'allowed'],
      ['daily', 'limited'],
    ]);
  });

  it.each([
    [{ mode: 'soft', overagePercent: 100 }, 'soft'],
    [{ mode: 'elastic', maxOveragePercent: 100, load: () => 0 }, 'elastic'],
    [{ mode: 'shadow' }, 'shadow'],
  ] as const)('marks a pass over the limit in %o as %s', async (throttle, result) => {
    const events = listen<DecisionEvent>(SLUICE_CHANNELS.decision);
    const limiter = createLimiter({ limit: 1, window: '1m', throttle, store: createMemoryStore(), clock: () => 0 });
    await limiter.consume('k');
    await limiter.consume('k');
    expect(events.map((e) => e.result)).toEqual(['allowed', result]);
  });

  it('marks a queued decision as queued', async () => {
    const events = listen<DecisionEvent>(SLUICE_CHANNELS.decision);
    const limiter = createLimiter({
      limit: 1,
      window: '1s',
      algorithm: 'gcra',
      queue: { maxDelayMs: 5000 },
      store: createMemoryStore(),
      clock: () => 0,
    });
    await limiter.consume('k');
    const queued = await limiter.consume('k');
    expect(queued.delayMs).toBeGreaterThan(0);
    expect(events.map((e) => e.result)).toEqual(['allowed', 'queued']);
  });

  it('reports a failed store as store_error with its error type, and on sluice:store-error', async () => {
    const decisions = listen<DecisionEvent>(SLUICE_CHANNELS.decision);
    const failures = listen<StoreErrorEvent>(SLUICE_CHANNELS.storeError);
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
    const limiter = createLimiter({ limit: 5, window: '1m', store: failingStore(refused), prefix: 'x', logger: quiet });
    const decision = await limiter.consume('k');
    expect(decision.allowed).toBe(true);
    expect(decisions.map((e) => [e.result, e.errorType])).toEqual([['store_error', 'ECONNREFUSED']]);
    expect(failures).toEqual([
      { limiter: 'x', store: 'down', errorType: 'ECONNREFUSED', error: refused, onStoreError: 'allow' },
    ]);
    await limiter.reset('k');
    expect(failures).toHaveLength(2);
  });

  // One error type was kept per limiter, written at each failure and read when a decision was
  // published: of two concurrent failures, both decisions named the later one's.
  it('gives each failed decision its own error type when failures overlap', async () => {
    const decisions = listen<DecisionEvent>(SLUICE_CHANNELS.decision);
    const codes = ['CLUSTERDOWN', 'ECONNRESET'];
    let calls = 0;
    const store: RateLimitStore = {
      ...failingStore(null),
      name: 'cluster',
      consume: () => Promise.reject(Object.assign(new Error('shard down'), { code: codes[calls++] })),
    };
    const limiter = createLimiter({ limit: 5, window: '1m', store, prefix: 'c', logger: quiet });
    await Promise.all([limiter.consume('a'), limiter.consume('b')]);
    expect(decisions.map((e) => [e.decision.key, e.errorType])).toEqual([
      ['a', 'CLUSTERDOWN'],
      ['b', 'ECONNRESET'],
    ]);
  });

  it('reports a store timeout as error type timeout', async () => {
    vi.useFakeTimers();
    const failures = listen<StoreErrorEvent>(SLUICE_CHANNELS.storeError);
    const hanging: RateLimitStore = { ...failingStore(null), consume: () => new Promise(() => {}) };
    const limiter = createLimiter({ limit: 5, window: '1m', store: hanging, storeTimeoutMs: 20, logger: quiet });
    const pending = limiter.consume('k');
    await vi.advanceTimersByTimeAsync(20);
    expect((await pending).reason).toBe('store-unavailable');
    expect(failures.map((e) => e.errorType)).toEqual(['timeout']);
  });

  it('publishes no decision when the fail policy throws, only the store error', async () => {
    const decisions = listen<DecisionEvent>(SLUICE_CHANNELS.decision);
    const failures = listen<StoreErrorEvent>(SLUICE_CHANNELS.storeError);
    const limiter = createLimiter({
      limit: 5,
      window: '1m',
      store: failingStore('not an error'),
      onStoreError: 'throw',
      logger: quiet,
    });
    await expect(limiter.consume('k')).rejects.toMatchObject({ code: 'ERR_SLUICE_STORE_UNAVAILABLE' });
    expect(decisions).toEqual([]);
    expect(failures.map((e) => [e.errorType, e.onStoreError])).toEqual([['_OTHER', 'throw']]);
  });
});

describe('sluice:queue and sluice:rules-reload', () => {
  const response = () => Object.assign(new EventEmitter(), { destroyed: false, writableEnded: false });

  it('publishes a hold when it starts and when it ends, completed or abandoned', async () => {
    vi.useFakeTimers();
    const events = listen<QueueEvent>(SLUICE_CHANNELS.queue);
    const done = hold(response() as unknown as ServerResponse, 300, 'api');
    const left = response();
    const abandoned = hold(left as unknown as ServerResponse, 300, 'api');
    await vi.advanceTimersByTimeAsync(100);
    left.emit('close');
    await vi.advanceTimersByTimeAsync(200);
    expect([await done, await abandoned]).toEqual([true, false]);
    const [first, second] = events;
    expect(events).toEqual([
      { phase: 'held', limiter: 'api', delayMs: 300 },
      { phase: 'held', limiter: 'api', delayMs: 300 },
      { phase: 'released', limiter: 'api', delayMs: 300, heldMs: 100, completed: false, hold: second },
      { phase: 'released', limiter: 'api', delayMs: 300, heldMs: 300, completed: true, hold: first },
    ]);
    // Each release names the very hold it ends.
    expect((events[2] as Extract<QueueEvent, { phase: 'released' }>).hold).toBe(second);
    expect((events[3] as Extract<QueueEvent, { phase: 'released' }>).hold).toBe(first);
  });

  it('names no hold in a release whose hold began while nobody listened', async () => {
    vi.useFakeTimers();
    const held = hold(response() as unknown as ServerResponse, 300, 'api');
    const events = listen<QueueEvent>(SLUICE_CHANNELS.queue);
    await vi.advanceTimersByTimeAsync(300);
    expect(await held).toBe(true);
    expect(events).toEqual([
      { phase: 'released', limiter: 'api', delayMs: 300, heldMs: 300, completed: true, hold: undefined },
    ]);
  });

  it('passes a rules reload to its subscribers as given', () => {
    const events = listen<RulesReloadEvent>(SLUICE_CHANNELS.rulesReload);
    const error = new Error('bad rules');
    publishRulesReload({ source: 'rules.yaml', ok: true });
    publishRulesReload({ source: 'rules.yaml', ok: false, error });
    expect(events).toEqual([
      { source: 'rules.yaml', ok: true },
      { source: 'rules.yaml', ok: false, error },
    ]);
  });
});

// Marked on the caller's options object, a limiter made later from that same object published
// nothing either.
it('an unpublished limiter leaves a limiter made later from the same options publishing', async () => {
  const decisions = listen<DecisionEvent>(SLUICE_CHANNELS.decision);
  const options = { limit: 10, window: '1m' as const, prefix: 'unpublished-look', store: createMemoryStore() };
  await createUnpublishedLimiter(options, 'nothing').consume('a');
  await createLimiter({ ...options, prefix: 'published-copy' }).consume('a');
  await createLimiter(Object.assign(options, { prefix: 'published-same-object' })).consume('a');
  expect(decisions.map((event) => event.limiter)).toEqual(['published-copy', 'published-same-object']);
});
