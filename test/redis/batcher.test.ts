import type { StoreReply } from '@sluice/core';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createBatcher, MAX_WAIT_MS } from '../../packages/redis/src/batcher.js';
import { figureText } from '../../packages/redis/src/figures.js';
import { type Script, scripts } from '../../packages/redis/src/scripts.js';
import { createStallGuard } from '../../packages/redis/src/stall-guard.js';

/**
 * The batcher's schedule on its own: which decisions each script call carries, and when it
 * leaves. A call here is a promise the test settles by hand, standing for a call in flight;
 * what Redis does with a call is the business of the Redis suites. Time is faked: `turn()` is
 * the end of a turn of the event loop (`setImmediate`).
 */
const script = scripts[0] as Script;
/** A decision's three entries: header, heads, figures (windowMs, capacity, limit, maxDelayMs). */
const ARGS = ['consume 1 gcra', ' p@gc.10.1000.10.0.0=', [1000, 10, 10, 0].map(figureText).join('')];

interface Call {
  readonly keys: readonly string[];
  readonly args: readonly string[];
  resolve(raw: unknown): void;
  reject(error: unknown): void;
}

/** A reply the script could send for `count` one-policy decisions that all passed, on Redis's clock. */
function replyFor(count: number): Buffer {
  const numbers = [1_700_000_000_000];
  for (let i = 0; i < count; i++) numbers.push(9, 100, 0);
  const buffer = Buffer.alloc(8 * numbers.length);
  for (const [i, n] of numbers.entries()) buffer.writeDoubleLE(n, 8 * i);
  return buffer;
}

interface HarnessOptions {
  notReady?: Error;
  groupOf?: (key: string) => number;
  connectionOf?: (group: number) => string;
  /** How long the process has waited for I/O, idle; by default all the (fake) time. */
  idleClock?: () => number;
}

function harness({
  notReady,
  groupOf = () => 0,
  connectionOf = () => 'redis',
  idleClock = () => performance.now(),
}: HarnessOptions = {}) {
  const calls: Call[] = [];
  const batcher = createBatcher({
    call: (_script, keys, args) =>
      new Promise((resolve, reject) => {
        calls.push({ keys: [...keys], args: [...args], resolve, reject });
      }),
    groupOf,
    connectionOf,
    notReady: () => notReady,
    stalls: createStallGuard(idleClock),
  });
  const ask = (key: string, args: readonly string[] = ARGS, timeoutMs = 100): Promise<StoreReply> =>
    batcher.decide(script, [key], args, { policyCount: 1, now: undefined, timeoutMs });
  /** Answers call `i` as the script would. */
  const land = async (i: number) => {
    const call = calls[i] as Call;
    call.resolve(replyFor(call.keys.length));
    await vi.advanceTimersByTimeAsync(0);
  };
  return { calls, batcher, ask, land, keysOf: (i: number) => calls[i]?.keys };
}

const turn = () => vi.advanceTimersByTimeAsync(0);

describe('Redis store batching: when a script call leaves', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setImmediate'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('sends what one turn asked for in one call, at the end of the turn', async () => {
    const { calls, ask, keysOf } = harness();
    const asked = [ask('a'), ask('b'), ask('c')];
    expect(calls).toHaveLength(0);
    await turn();
    expect(calls).toHaveLength(1);
    expect(keysOf(0)).toEqual(['a', 'b', 'c']);
    calls[0]?.resolve(replyFor(3));
    expect((await Promise.all(asked)).map((reply) => reply.allowed)).toEqual([true, true, true]);
  });

  it('sends each run of decisions in a row with the same arguments once, its count first in its header', async () => {
    const { calls, ask } = harness();
    const costly = ['consume 3 gcra', ...ARGS.slice(1)];
    const asked = [ask('a'), ask('b'), ask('c', costly), ask('d')];
    await turn();
    const policy = ARGS.slice(1);
    expect(calls[0]?.args).toEqual([
      '2 consume 1 gcra',
      ...policy,
      '1 consume 3 gcra',
      ...policy,
      '1 consume 1 gcra',
      ...policy,
    ]);
    calls[0]?.resolve(replyFor(4));
    await Promise.all(asked);
  });

  it('holds a batch while a call of its lane is in flight, and sends it, with all asked meanwhile, when that call lands', async () => {
    const { calls, ask, land, keysOf } = harness();
    const first = ask('a');
    await turn();
    const later = [ask('b')];
    await turn();
    later.push(ask('c'), ask('d'));
    await turn();
    expect(calls).toHaveLength(1);
    await land(0);
    expect((await first).allowed).toBe(true);
    expect(calls).toHaveLength(2);
    expect(keysOf(1)).toEqual(['b', 'c', 'd']);
    await land(1);
    expect(await Promise.all(later)).toHaveLength(3);
  });

  it('sends the waiting batch when the call ahead fails, and fails only the decisions that call carried', async () => {
    const { calls, ask, keysOf } = harness();
    const first = ask('a');
    await turn();
    const second = ask('b');
    await turn();
    calls[0]?.reject(new Error('connection lost'));
    await expect(first).rejects.toThrow('connection lost');
    expect(keysOf(1)).toEqual(['b']);
    calls[1]?.resolve(replyFor(1));
    expect((await second).allowed).toBe(true);
  });

  it(`waits no longer than ${MAX_WAIT_MS} ms for a call that does not land`, async () => {
    const { calls, ask, keysOf } = harness();
    void ask('a');
    await turn();
    void ask('b');
    await turn();
    await vi.advanceTimersByTimeAsync(MAX_WAIT_MS - 1);
    expect(calls).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls).toHaveLength(2);
    expect(keysOf(1)).toEqual(['b']);
  });

  it('counts that limit from when a batch starts waiting, not from an earlier wait', async () => {
    const { calls, ask, land } = harness();
    void ask('a');
    await turn();
    void ask('b');
    await turn();
    await vi.advanceTimersByTimeAsync(1);
    await land(0);
    expect(calls).toHaveLength(2);
    void ask('c');
    await turn();
    await vi.advanceTimersByTimeAsync(MAX_WAIT_MS - 1);
    expect(calls).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls).toHaveLength(3);
  });

  it('sends a full batch of 32 keys at once, in flight or not', async () => {
    const { calls, ask, keysOf } = harness();
    void ask('first');
    await turn();
    for (let i = 0; i < 33; i++) void ask(`k${i}`);
    // The 33rd found 32 waiting and sent them; it waits for the calls ahead.
    expect(calls).toHaveLength(2);
    expect(keysOf(1)).toHaveLength(32);
    await turn();
    expect(calls).toHaveLength(2);
  });

  it('sends every waiting batch on flush, so a command sent next comes after them', async () => {
    const { calls, batcher, ask, keysOf } = harness();
    void ask('a');
    await turn();
    void ask('b');
    batcher.flush();
    expect(calls).toHaveLength(2);
    expect(keysOf(1)).toEqual(['b']);
  });

  it('fails a batch at once, without a call, while the client is not ready', async () => {
    const { calls, ask } = harness({ notReady: new Error('not connected') });
    const refused = expect(ask('a')).rejects.toThrow('not connected');
    await turn();
    await refused;
    expect(calls).toHaveLength(0);
  });
});

describe('Redis store batching: a connection that stops answering', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setImmediate', 'performance'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  /** Fails with the code a held-back decision gets, which the limiter answers by its fail policy. */
  const heldBack = (asked: Promise<StoreReply>) =>
    expect(asked).rejects.toMatchObject({ code: 'ERR_SLUICE_STORE_UNAVAILABLE' });

  it('sends no decision whose caller would have given up on the calls ahead of it, but one a second to look', async () => {
    const { calls, ask, land } = harness();
    void ask('a');
    await turn();
    await vi.advanceTimersByTimeAsync(101);
    // Unanswered for longer than the 100 ms these callers wait: sent, each would wait behind it.
    const refused = [heldBack(ask('b')), heldBack(ask('c'))];
    await vi.advanceTimersByTimeAsync(MAX_WAIT_MS);
    await Promise.all(refused);
    expect(calls).toHaveLength(1);
    // A second after the last call was sent, one decision goes, to look whether Redis answers
    // again: one, not its batch, since each one sent is charged once Redis resumes.
    await vi.advanceTimersByTimeAsync(1000 - 101 - MAX_WAIT_MS);
    void ask('look');
    const besideTheLook = heldBack(ask('d'));
    await vi.advanceTimersByTimeAsync(MAX_WAIT_MS);
    await besideTheLook;
    expect(calls.map((call) => call.keys)).toEqual([['a'], ['look']]);
    // Redis answers the look, and so every call sent before it, which it answered first.
    await land(1);
    void ask('after');
    // (The batch waits its 2 ms for the first call, which this test never lands.)
    await vi.advanceTimersByTimeAsync(MAX_WAIT_MS);
    expect(calls).toHaveLength(3);
  });

  it('still sends a decision whose caller waits longer than the calls ahead have', async () => {
    const { calls, ask } = harness();
    void ask('a');
    await turn();
    await vi.advanceTimersByTimeAsync(101);
    void ask('patient', ARGS, 5000);
    const refused = heldBack(ask('hasty'));
    await vi.advanceTimersByTimeAsync(MAX_WAIT_MS);
    await refused;
    expect(calls.map((call) => call.keys)).toEqual([['a'], ['patient']]);
  });

  // Regression: a call's wait was counted in time the process spent busy, its replies unread
  // (a burst of work, many socket callbacks in one turn): on a healthy Redis it held back
  // decisions as if Redis had stalled.
  it('counts only the time the process waited for I/O, idle: busy, its replies unread, it sends on', async () => {
    let idle = 0;
    const { calls, ask } = harness({ idleClock: () => idle });
    void ask('a');
    await turn();
    // 300 ms of work, three timeouts: Redis's reply may be in the socket, unread.
    await vi.advanceTimersByTimeAsync(300);
    void ask('b');
    await vi.advanceTimersByTimeAsync(MAX_WAIT_MS);
    expect(calls).toHaveLength(2);
    // Idle for longer than the timeout, with no reply: that is Redis's silence.
    idle += 101;
    const refused = heldBack(ask('c'));
    await vi.advanceTimersByTimeAsync(MAX_WAIT_MS);
    await refused;
    expect(calls).toHaveLength(2);
  });

  // Regression: a loop that never waits for I/O (a chain of setImmediates) or a CPU profiler
  // left the idle time still, so a stall went unseen and every decision was sent into it.
  it('counts a call unanswered 250 ms past its timeout as a stall, however little the loop waited', async () => {
    const { calls, ask } = harness({ idleClock: () => 0 });
    void ask('a');
    await turn();
    await vi.advanceTimersByTimeAsync(351);
    const refused = heldBack(ask('b'));
    await vi.advanceTimersByTimeAsync(MAX_WAIT_MS);
    await refused;
    expect(calls).toHaveLength(1);
  });

  it('takes an answer to a later call as the end of a stall: a call lost on the way does not stop the connection', async () => {
    const { calls, ask, land } = harness();
    void ask('lost');
    await turn();
    void ask('answered');
    await vi.advanceTimersByTimeAsync(MAX_WAIT_MS);
    expect(calls).toHaveLength(2);
    await land(1);
    await vi.advanceTimersByTimeAsync(500);
    void ask('after');
    await vi.advanceTimersByTimeAsync(MAX_WAIT_MS);
    expect(calls).toHaveLength(3);
  });

  it('holds back only the groups whose connection stalls', async () => {
    const groups = ['a', 'b'];
    const { calls, ask, land } = harness({
      groupOf: (key) => groups.indexOf(key[0] as string),
      connectionOf: (group) => `master ${groups[group]}`,
    });
    void ask('a-stalled');
    void ask('b-answering');
    await turn();
    await land(1);
    await vi.advanceTimersByTimeAsync(101);
    const refused = heldBack(ask('a-next'));
    void ask('b-next');
    await vi.advanceTimersByTimeAsync(MAX_WAIT_MS);
    await refused;
    expect(calls.map((call) => call.keys)).toEqual([['a-stalled'], ['b-answering'], ['b-next']]);
  });
});
