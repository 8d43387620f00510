import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import {
  createLimiter,
  type OnStoreError,
  OUTAGE_QUIET_MS,
  type RateLimitStore,
  SLUICE_CHANNELS,
  STORE_DENY_RETRY_AFTER_MS,
  type StoreReply,
  type StoreRequest,
} from '@sluice/core';
import { createMemoryStore } from '@sluice/memory';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

type Mode = 'up' | 'rejects' | 'throws' | 'hangs' | 'late-reject' | 'late-answer';

/** A remote-looking store (not `local`) whose behaviour a test switches at will. */
function flakyStore() {
  const inner = createMemoryStore({ maxKeys: 10 });
  const state = { mode: 'up' as Mode, calls: 0 };
  const misbehave = <T>(work: () => Promise<T>): Promise<T> => {
    state.calls++;
    switch (state.mode) {
      case 'up':
        return work();
      case 'rejects':
        return Promise.reject(new Error('connection refused'));
      case 'throws':
        throw new Error('socket closed');
      case 'hangs':
        return new Promise<T>(() => {});
      case 'late-reject':
        return new Promise<T>((_, reject) => setTimeout(() => reject(new Error('too late')), 500));
      case 'late-answer':
        return new Promise<T>((resolve) => setTimeout(() => resolve(work()), 500));
    }
  };
  const store: RateLimitStore = {
    name: 'flaky',
    consume: (request: StoreRequest) => misbehave<StoreReply>(() => inner.consume(request)),
    reset: (...args) => misbehave(() => inner.reset(...args)),
    // A late answer is the consume's: the refund that follows it is answered at once.
    refund: (request) =>
      state.mode === 'late-answer' ? inner.refund(request) : misbehave(() => inner.refund(request)),
  };
  return { store, state };
}

function setup(onStoreError: OnStoreError, storeTimeoutMs = 50, limit = 2) {
  const { store, state } = flakyStore();
  const logger = { warn: vi.fn<(message: string) => void>() };
  const limiter = createLimiter({
    limit,
    window: '1m',
    store,
    onStoreError,
    storeTimeoutMs,
    logger,
    clock: () => 0,
  });
  const warnings = () => logger.warn.mock.calls.map(([m]) => m.match(/WRN_SLUICE_\w+/)?.[0]);
  return { limiter, state, warnings };
}

const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);
beforeEach(() => {
  unhandled.length = 0;
  process.on('unhandledRejection', onUnhandled);
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
});
afterEach(async () => {
  await vi.runAllTimersAsync();
  vi.useRealTimers();
  // Let Node report any rejection nobody handled before checking.
  await new Promise((resolve) => setImmediate(resolve));
  process.off('unhandledRejection', onUnhandled);
  expect(unhandled).toEqual([]);
});

describe.each(['rejects', 'throws', 'hangs', 'late-reject'] as const)('a store that %s', (failure) => {
  const settle = async <T>(pending: Promise<T>): Promise<T> => {
    await vi.advanceTimersByTimeAsync(50);
    return pending;
  };

  it("'allow' lets requests through, marked store-unavailable, warning once per outage", async () => {
    const { limiter, state, warnings } = setup('allow');
    state.mode = failure;
    for (let i = 0; i < 5; i++) {
      const decision = await settle(limiter.consume('k'));
      expect(decision).toMatchObject({ allowed: true, reason: 'store-unavailable', retryAfterMs: 0 });
    }
    expect(warnings()).toEqual(['WRN_SLUICE_STORE_UNAVAILABLE']);
    state.mode = 'up';
    expect(await limiter.consume('k')).toMatchObject({ allowed: true, remaining: 1 });
    // Recovered once the store has answered for OUTAGE_QUIET_MS without a failure.
    expect(warnings()).toEqual(['WRN_SLUICE_STORE_UNAVAILABLE']);
    await vi.advanceTimersByTimeAsync(OUTAGE_QUIET_MS);
    expect(await limiter.consume('k')).toMatchObject({ allowed: true, remaining: 0 });
    expect(warnings()).toEqual(['WRN_SLUICE_STORE_UNAVAILABLE', 'WRN_SLUICE_STORE_RECOVERED']);
    // A second outage is a new one, reported again.
    state.mode = failure;
    await settle(limiter.consume('k'));
    expect(warnings()).toHaveLength(3);
  });

  it("'deny' refuses with a finite wait, and recovers by itself", async () => {
    const { limiter, state } = setup('deny');
    state.mode = failure;
    const decision = await settle(limiter.consume('k'));
    expect(decision).toMatchObject({ allowed: false, reason: 'store-unavailable' });
    expect(decision.retryAfterMs).toBe(STORE_DENY_RETRY_AFTER_MS);
    state.mode = 'up';
    expect(await limiter.consume('k')).toMatchObject({ allowed: true });
    expect((await limiter.consume('k')).reason).toBeUndefined();
  });

  it("'throw' rejects with a coded error that keeps the cause", async () => {
    const { limiter, state } = setup('throw');
    state.mode = failure;
    // The handler is attached before time moves, as a caller awaiting the call would have it.
    const outcome = limiter.consume('k').catch((error: unknown) => error);
    await vi.advanceTimersByTimeAsync(50);
    const error = (await outcome) as { code: string; cause: unknown };
    const timedOut = failure === 'hangs' || failure === 'late-reject';
    expect(error.code).toBe(timedOut ? 'ERR_SLUICE_STORE_TIMEOUT' : 'ERR_SLUICE_STORE_UNAVAILABLE');
    expect(error.cause).toBeInstanceOf(Error);
  });

  it('reset and refund follow the same policy instead of rejecting', async () => {
    const { limiter, state } = setup('allow');
    state.mode = failure;
    await expect(settle(limiter.reset('k'))).resolves.toBeUndefined();
    await expect(settle(limiter.refund('k', 1))).resolves.toBeUndefined();
  });
});

describe('warning flood: one warning per outage, not per failure', () => {
  it('a store failing every other call logs one warning for 1000 decisions, not 999', async () => {
    const { limiter, state, warnings } = setup('allow');
    for (let i = 0; i < 1000; i++) {
      state.mode = i % 2 === 0 ? 'rejects' : 'up';
      await limiter.consume(`k${i}`);
      await vi.advanceTimersByTimeAsync(3);
    }
    expect(warnings()).toEqual(['WRN_SLUICE_STORE_UNAVAILABLE']);
    // Quiet for long enough, the outage is over; the next failure is a new outage.
    state.mode = 'up';
    await vi.advanceTimersByTimeAsync(OUTAGE_QUIET_MS);
    await limiter.consume('k');
    state.mode = 'rejects';
    await limiter.consume('k');
    expect(warnings()).toEqual([
      'WRN_SLUICE_STORE_UNAVAILABLE',
      'WRN_SLUICE_STORE_RECOVERED',
      'WRN_SLUICE_STORE_UNAVAILABLE',
    ]);
  });
});

describe("one store's outage, told once to each logger, whatever the number of limiters on it", () => {
  /** Limiters on one flaky store, each with the logger and fail policy it is given. */
  function limitersOn(settings: readonly { logger: { warn(message: string): void }; onStoreError: OnStoreError }[]) {
    const { store, state } = flakyStore();
    const limiters = settings.map(({ logger, onStoreError }, i) =>
      createLimiter({ limit: 2, window: '1m', prefix: `route-${i}`, store, onStoreError, logger, clock: () => 0 }),
    );
    return { limiters, state };
  }
  const recording = () => {
    const lines: string[] = [];
    return { lines, warn: (message: string) => lines.push(message.match(/WRN_SLUICE_\w+/)?.[0] ?? message) };
  };

  it('fifty limiters on one store log its outage once and its recovery once (they logged fifty of each)', async () => {
    const logger = recording();
    const { limiters, state } = limitersOn(Array.from({ length: 50 }, () => ({ logger, onStoreError: 'deny' })));
    state.mode = 'rejects';
    for (const limiter of limiters) expect((await limiter.consume('k')).reason).toBe('store-unavailable');
    state.mode = 'up';
    await vi.advanceTimersByTimeAsync(OUTAGE_QUIET_MS);
    for (const limiter of limiters) expect((await limiter.consume('k')).allowed).toBe(true);
    expect(logger.lines).toEqual(['WRN_SLUICE_STORE_UNAVAILABLE', 'WRN_SLUICE_STORE_RECOVERED']);
    // Over, it is over for all of them: the next failure, of any limiter, is a new outage.
    state.mode = 'rejects';
    await limiters[7]?.consume('k');
    expect(logger.lines.at(-1)).toBe('WRN_SLUICE_STORE_UNAVAILABLE');
  });

  it('a limiter failing while another answers keeps the outage open: no recovery is logged in between', async () => {
    const logger = recording();
    const { limiters, state } = limitersOn([
      { logger, onStoreError: 'allow' },
      { logger, onStoreError: 'allow' },
    ]);
    for (let i = 0; i < 100; i++) {
      state.mode = i % 2 === 0 ? 'rejects' : 'up';
      await limiters[i % 2]?.consume(`k${i}`);
      await vi.advanceTimersByTimeAsync(100);
    }
    expect(logger.lines).toEqual(['WRN_SLUICE_STORE_UNAVAILABLE']);
  });

  it('another logger, or another fail policy, hears of the outage in its own words', async () => {
    const first = recording();
    const second = recording();
    const { limiters, state } = limitersOn([
      { logger: first, onStoreError: 'allow' },
      { logger: second, onStoreError: 'allow' },
      { logger: first, onStoreError: 'deny' },
    ]);
    state.mode = 'rejects';
    for (const limiter of limiters) await limiter.consume('k');
    expect(first.lines).toEqual(['WRN_SLUICE_STORE_UNAVAILABLE', 'WRN_SLUICE_STORE_UNAVAILABLE']);
    expect(second.lines).toEqual(['WRN_SLUICE_STORE_UNAVAILABLE']);
  });
});

describe('storeTimeoutMs bounds every call', () => {
  it('a store that never answers is given up on at exactly storeTimeoutMs', async () => {
    const { limiter, state } = setup('allow', 80);
    state.mode = 'hangs';
    let settled = false;
    const pending = limiter.consume('k').then((d) => {
      settled = true;
      return d;
    });
    await vi.advanceTimersByTimeAsync(79);
    expect(settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(settled).toBe(true);
    expect((await pending).reason).toBe('store-unavailable');
  });

  it('a timed-out call is not retried (the store may still have counted it)', async () => {
    const { limiter, state } = setup('allow', 10);
    state.mode = 'hangs';
    const pending = limiter.consume('k');
    await vi.advanceTimersByTimeAsync(10);
    await pending;
    expect(state.calls).toBe(1);
  });
});

describe('shadow mode and store failure', () => {
  it("even with onStoreError 'deny', shadow mode never refuses", async () => {
    const { store, state } = flakyStore();
    const limiter = createLimiter({
      limit: 2,
      window: '1m',
      store,
      onStoreError: 'deny',
      throttle: { mode: 'shadow' },
      logger: { warn: () => {} },
    });
    state.mode = 'rejects';
    const decision = await limiter.consume('k');
    expect(decision).toMatchObject({
      allowed: true,
      overLimit: 'shadow',
      reason: 'store-unavailable',
      retryAfterMs: 0,
    });
    // What 'deny' would have done stays visible per policy.
    expect(decision.policies[0]).toMatchObject({ allowed: false, retryAfterMs: STORE_DENY_RETRY_AFTER_MS });
  });
});

describe('a store whose reply is no decision', () => {
  /** A remote-looking store answering every decision with `reply`. */
  const answering = (reply: unknown): RateLimitStore => ({
    name: 'garbled',
    consume: async () => reply as StoreReply,
    reset: async () => {},
    refund: async () => {},
  });
  const outcome = { allowed: true, remaining: 1, resetAfterMs: 10, retryAfterMs: 0, delayMs: 0 };
  const garbled: [string, unknown][] = [
    ['null', null],
    ['an empty object', {}],
    ['no outcomes', { allowed: true, now: 0, outcomes: [] }],
    ['`allowed` as text', { allowed: 'yes', now: 0, outcomes: [outcome] }],
    ['a NaN figure', { allowed: true, now: 0, outcomes: [{ ...outcome, remaining: Number.NaN }] }],
    ['a figure as text', { allowed: true, now: 0, outcomes: [{ ...outcome, retryAfterMs: '0' }] }],
    ['a negative delay', { allowed: true, now: 0, outcomes: [{ ...outcome, delayMs: -100 }] }],
    // SPEC's figures are whole: a remaining of 0.5 made `peek` allow what `consume` refused.
    ['a fraction remaining', { allowed: true, now: 0, outcomes: [{ ...outcome, remaining: 0.5 }] }],
    ['a fraction of a wait', { allowed: true, now: 0, outcomes: [{ ...outcome, resetAfterMs: 1.5 }] }],
    ['an endless delay', { allowed: true, now: 0, outcomes: [{ ...outcome, delayMs: Number.POSITIVE_INFINITY }] }],
    ['an unknown mark', { allowed: true, now: 0, outcomes: [outcome], overLimit: 'hard' }],
    // A reply that contradicts itself: one policy's limiter read the outcome, several's `allowed`.
    ['`allowed` false over an outcome that allowed', { allowed: false, now: 0, outcomes: [outcome] }],
    [
      '`allowed` true over an outcome that refused',
      { allowed: true, now: 0, outcomes: [{ ...outcome, allowed: false, retryAfterMs: 50 }] },
    ],
    ['a refusal with no wait', { allowed: false, now: 0, outcomes: [{ ...outcome, allowed: false }] }],
    ['an allowed outcome with a wait', { allowed: true, now: 0, outcomes: [{ ...outcome, retryAfterMs: 50 }] }],
  ];

  it.each(garbled)('%s fails under the fail policy, coded, for consume and peek', async (_label, reply) => {
    const logger = { warn: vi.fn<(message: string) => void>() };
    const options = { limit: 2, window: '1m', store: answering(reply), logger, clock: () => 0 } as const;
    const allowing = createLimiter({ ...options, prefix: 'allow', onStoreError: 'allow' });
    for (const decision of [await allowing.consume('k'), await allowing.peek('k')]) {
      expect(decision).toMatchObject({ allowed: true, reason: 'store-unavailable' });
    }
    expect(logger.warn.mock.calls[0]?.[0]).toMatch(/WRN_SLUICE_STORE_UNAVAILABLE.*The store answered a decision with/);
    const throwing = createLimiter({ ...options, prefix: 'throw', onStoreError: 'throw' });
    await expect(throwing.consume('k')).rejects.toMatchObject({
      code: 'ERR_SLUICE_STORE_UNAVAILABLE',
      cause: expect.objectContaining({ code: 'ERR_SLUICE_BAD_STORE_REPLY' }),
    });
  });

  it.each([
    ['a reply object', { allowed: true, now: 0, outcomes: [] }],
    ['null', null],
  ])(
    'a store that answers with %s instead of a promise fails coded, with no timeout reported later',
    async (_label, result) => {
      const events: string[] = [];
      const warnings: string[] = [];
      const store = { ...answering(null), consume: () => result as never };
      const options = { limit: 2, window: '1m', store, clock: () => 0, storeTimeoutMs: 20 } as const;
      const logger = { warn: (message: string) => warnings.push(message) };
      const allowing = createLimiter({ ...options, logger, prefix: 'allow', onStoreError: 'allow' });
      const throwing = createLimiter({ ...options, logger, prefix: 'throw', onStoreError: 'throw' });
      const failed = (event: unknown) => events.push((event as { errorType: string }).errorType);
      subscribe(SLUICE_CHANNELS.storeError, failed);
      try {
        expect(await allowing.consume('k')).toMatchObject({ allowed: true, reason: 'store-unavailable' });
        await expect(throwing.consume('k')).rejects.toMatchObject({
          code: 'ERR_SLUICE_STORE_UNAVAILABLE',
          cause: expect.objectContaining({ code: 'ERR_SLUICE_BAD_STORE_REPLY' }),
        });
        await vi.advanceTimersByTimeAsync(100);
      } finally {
        unsubscribe(SLUICE_CHANNELS.storeError, failed);
      }
      expect(events).toEqual(['ERR_SLUICE_BAD_STORE_REPLY', 'ERR_SLUICE_BAD_STORE_REPLY']);
      // One warning per limiter, each naming what the store did.
      expect(warnings).toHaveLength(2);
      for (const warning of warnings) expect(warning).toMatch(/instead of a promise/);
    },
  );

  it('is no recovery: after an outage, the store is back only once it answers with a decision', async () => {
    const { store, state } = flakyStore();
    let garble = false;
    const consume = store.consume;
    const garbling: RateLimitStore = {
      ...store,
      consume: (request) => (garble ? Promise.resolve({ allowed: 'yes' } as unknown as StoreReply) : consume(request)),
    };
    const logger = { warn: vi.fn<(message: string) => void>() };
    const limiter = createLimiter({ limit: 2, window: '1m', store: garbling, onStoreError: 'allow', logger });
    const warnings = () => logger.warn.mock.calls.map(([m]) => m.match(/WRN_SLUICE_\w+/)?.[0]);
    state.mode = 'rejects';
    await limiter.consume('k');
    await vi.advanceTimersByTimeAsync(OUTAGE_QUIET_MS);
    state.mode = 'up';
    garble = true;
    expect(await limiter.consume('k')).toMatchObject({ reason: 'store-unavailable' });
    expect(warnings()).toEqual(['WRN_SLUICE_STORE_UNAVAILABLE']);
    garble = false;
    await vi.advanceTimersByTimeAsync(OUTAGE_QUIET_MS);
    expect(await limiter.consume('k')).toMatchObject({ allowed: true, remaining: 1 });
    expect(warnings()).toEqual(['WRN_SLUICE_STORE_UNAVAILABLE', 'WRN_SLUICE_STORE_RECOVERED']);
  });

  it('a reply that is a decision, Infinity for a wait no state could end included, passes', async () => {
    const reply = { allowed: false, now: 0, outcomes: [{ ...outcome, allowed: false, retryAfterMs: Infinity }] };
    const limiter = createLimiter({ limit: 2, window: '1m', store: answering(reply), onStoreError: 'throw' });
    expect(await limiter.consume('k')).toMatchObject({ allowed: false, retryAfterMs: Infinity });
  });
});

// A logger that threw made a fail-open request fail with the logger's error, and on the
// store's recovery left the request unanswered and its rejection unhandled (the process
// exited); an async one that rejected leaked both warnings' rejections.
describe.each([
  [
    'throws',
    () => {
      throw new Error('logger broken');
    },
  ],
  ['rejects', () => Promise.reject(new Error('logger broken'))],
])('a logger whose warn %s', (_, fails) => {
  it('changes no decision through an outage and the recovery, and leaks nothing', async () => {
    const { store, state } = flakyStore();
    // A plain function: a mock would handle the promise it returns, to record how it settled.
    let warned = 0;
    const logger = {
      warn: () => {
        warned++;
        return fails();
      },
    };
    const limiter = createLimiter({ limit: 5, window: '1m', store, storeTimeoutMs: 50, logger, clock: () => 0 });
    state.mode = 'rejects';
    expect(await limiter.consume('k')).toMatchObject({ allowed: true, reason: 'store-unavailable' });
    state.mode = 'up';
    await vi.advanceTimersByTimeAsync(OUTAGE_QUIET_MS);
    expect(await limiter.consume('k')).toMatchObject({ allowed: true, remaining: 4 });
    // Both warnings were asked for, and each failure of the logger's was swallowed.
    expect(warned).toBe(2);
  });
});

// A store slower than storeTimeoutMs still decides, and charges, once it answers. Under 'deny'
// the request it charged was refused: SPEC §2's "a rejected request spends no quota" was
// broken, and the next request of a limit of 2 was refused.
describe('a store that answers after the timeout', () => {
  /** One request charged on time, then one of cost 2 answered late; what the store holds after. */
  const lateAfterOne = async (onStoreError: OnStoreError, limit: number, shadow = false) => {
    const { store, state } = flakyStore();
    const limiter = createLimiter({
      limit,
      window: '1m',
      store,
      onStoreError,
      storeTimeoutMs: 50,
      logger: { warn() {} },
      clock: () => 0,
      ...(shadow ? { throttle: { mode: 'shadow' as const } } : {}),
    });
    expect(await limiter.consume('k')).toMatchObject({ allowed: true });
    state.mode = 'late-answer';
    const outcome = limiter.consume('k', { cost: 2 }).catch((error: unknown) => error);
    await vi.advanceTimersByTimeAsync(50);
    const answered = await outcome;
    // The store's answer lands, and a refund, if any, follows it.
    await vi.advanceTimersByTimeAsync(1000);
    state.mode = 'up';
    return { answered, remaining: (await limiter.peek('k')).remaining };
  };

  it("under 'deny', gives the late charge back, once and whole", async () => {
    const { answered, remaining } = await lateAfterOne('deny', 5);
    expect(answered).toMatchObject({ allowed: false, reason: 'store-unavailable' });
    expect(remaining).toBe(4);
  });

  // The refund of a late charge carried no time: once the window had turned and the client had
  // been charged in the next one, it came off that window's count, a unit more there.
  it("under 'deny', gives a late charge back only while its window still counts it", async () => {
    const { store, state } = flakyStore();
    let now = 900;
    const limiter = createLimiter({
      limit: 3,
      window: '1s',
      algorithm: 'fixed-window',
      store,
      onStoreError: 'deny',
      storeTimeoutMs: 50,
      logger: { warn() {} },
      clock: () => now,
    });
    state.mode = 'late-answer';
    const late = limiter.consume('k');
    await vi.advanceTimersByTimeAsync(50);
    expect(await late).toMatchObject({ allowed: false, reason: 'store-unavailable' });
    // The late answer charges the window it was asked in; its refund is sent a timeout later,
    // by when the window has turned and the client been charged in the next one.
    await vi.advanceTimersByTimeAsync(460);
    state.mode = 'up';
    now = 1_000;
    for (let i = 0; i < 3; i++) expect((await limiter.consume('k')).allowed).toBe(true);
    await vi.advanceTimersByTimeAsync(1000);
    expect((await limiter.peek('k')).remaining).toBe(0);
  });

  it("under 'deny', gives nothing back for a late refusal: it charged nothing", async () => {
    expect((await lateAfterOne('deny', 2)).remaining).toBe(1);
  });

  // Under 'throw' the caller decides: the decision service's Envoy lets the request through.
  it("under 'allow' and 'throw', and in shadow mode under 'deny', keeps it", async () => {
    const allowed = await lateAfterOne('allow', 5);
    expect(allowed.answered).toMatchObject({ allowed: true, reason: 'store-unavailable' });
    expect(allowed.remaining).toBe(2);
    const thrown = await lateAfterOne('throw', 5);
    expect(thrown.answered).toMatchObject({ code: 'ERR_SLUICE_STORE_TIMEOUT' });
    expect(thrown.remaining).toBe(2);
    const shadow = await lateAfterOne('deny', 5, true);
    expect(shadow.answered).toMatchObject({ allowed: true, overLimit: 'shadow' });
    expect(shadow.remaining).toBe(2);
  });
});
