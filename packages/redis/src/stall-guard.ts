import { SluiceError } from '@sluice/core';

/** How often a stalled connection is sent one call, to look whether Redis answers again. */
const LOOK_EVERY_MS = 1000;
/**
 * How much longer than its timeout a call may go unanswered, in time of any kind, before its
 * connection counts as stalled however little the loop waited: a process blocked longer (a
 * long synchronous stretch, a long GC pause) may hold back the first calls after it.
 */
const BUSY_GRACE_MS = 250;

/** How a connection stands when a call is to be sent on it. */
export interface Stall {
  /**
   * How long the process has waited for I/O, idle, since the oldest call still unanswered on
   * it was sent: time the process spent busy, its replies unread, is not Redis's silence.
   */
  readonly waitedMs: number;
  /** How long, in time of any kind, since the oldest call still unanswered on it was sent. */
  readonly sinceSentMs: number;
  /** How long ago a call was last sent on it. */
  readonly sinceLastSentMs: number;
}

export interface StallGuard {
  /** `undefined` when no call on `connection` is unanswered. */
  stall(connection: string): Stall | undefined;
  /**
   * Counts `reply`, a call just sent on `connection`, as unanswered until Redis answers it: with
   * a reply, an error reply, or the connection closing, not ioredis's own `commandTimeout`.
   */
  watch(connection: string, reply: Promise<unknown>): void;
}

/**
 * How long the event loop has waited for I/O, in all: Node's own figure, the time it spent in
 * the event provider (epoll_wait), where a reply that arrives is read at once. Taken when the
 * module loads, before a test's fake timers may stand in for `performance`.
 */
const { nodeTiming } = performance;
const loopIdleMs = (): number => nodeTiming.idleTime;

/**
 * Watches for a Redis that has stopped answering while its connection stays open (a paused or
 * frozen server, a host gone without a reset). A call its caller gave up on after the
 * limiter's `storeTimeoutMs` would still wait in the connection and run, charging its client,
 * once Redis resumes, though the fail policy answered it long before; and every call sent
 * meanwhile is held in the process. So a call is not sent while the oldest unanswered call on
 * its connection has waited longer than the call's own timeout (`waitedTooLong`), but for one
 * a second (or every two timeouts, if longer), which looks whether Redis answers again
 * (`lookDue`).
 *
 * A call has waited only while the process was idle, waiting for I/O (`idleClock`, by default
 * the event loop's idle time): a reply that arrives then is read at once, so idle time without
 * one is Redis's silence. Time the process spends busy (a burst of work, a server's many
 * socket callbacks in one turn, a GC pause), its replies unread in the socket, does not count,
 * and a quiet process that sends nothing still counts the wait. A loop that never waits (a
 * chain of `setImmediate`s polls without waiting) or a CPU profiler (whose signals cut the
 * waits short) counts little or none of it, so a call unanswered for 250 ms past its
 * timeout, in time of any kind, counts as stalled too: the calls a stall takes stay bounded.
 *
 * Once a call is answered (or fails: the connection closing fails it), the calls sent before
 * it stop counting as unanswered: Redis answers a connection's calls in order, so one left
 * over was lost, and must not stop the connection for good. Per connection: on a Cluster a
 * master that stalls stops its own slots only, and all of them at once.
 */
export function createStallGuard(idleClock: () => number = loopIdleMs): StallGuard {
  /** Per connection, its unanswered calls (the idle clock when each was sent), oldest first, and when a call was last sent. */
  const connections = new Map<
    string,
    { calls: { readonly idleAt: number; readonly sentAt: number }[]; lastSentAt: number }
  >();

  return {
    stall(connection) {
      const state = connections.get(connection);
      if (state === undefined) return undefined;
      const oldest = state.calls[0] as { idleAt: number; sentAt: number };
      const now = performance.now();
      return {
        waitedMs: idleClock() - oldest.idleAt,
        sinceSentMs: now - oldest.sentAt,
        sinceLastSentMs: now - state.lastSentAt,
      };
    },
    watch(connection, reply) {
      let state = connections.get(connection);
      if (state === undefined) {
        state = { calls: [], lastSentAt: 0 };
        connections.set(connection, state);
      }
      const own = state;
      const call = { idleAt: idleClock(), sentAt: performance.now() };
      own.calls.push(call);
      own.lastSentAt = call.sentAt;
      const answer = (): void => {
        // This call and every one sent before it; nothing if a later call's answer took them.
        const at = own.calls.indexOf(call);
        if (at < 0) return;
        own.calls.splice(0, at + 1);
        if (own.calls.length === 0 && connections.get(connection) === own) connections.delete(connection);
      };
      reply.then(answer, (error: unknown) => {
        if (answeredBy(error)) answer();
      });
    },
  };
}

/** Whether a caller who waits `timeoutMs` at most would give up before the calls ahead of it are answered. */
export function waitedTooLong(stall: Stall | undefined, timeoutMs: number): stall is Stall {
  return stall !== undefined && (stall.waitedMs > timeoutMs || stall.sinceSentMs > timeoutMs + BUSY_GRACE_MS);
}

/** Whether it is time to send one call on a stalled connection, to look whether Redis answers again. */
export function lookDue(stall: Stall, timeoutMs: number): boolean {
  return stall.sinceLastSentMs >= Math.max(LOOK_EVERY_MS, 2 * timeoutMs);
}

/**
 * Whether a call's failure is an answer from Redis (an error reply, or its connection closing)
 * rather than ioredis's own `commandTimeout` giving up on it, which says nothing of Redis: taken
 * for an answer, it ended every stall as soon as it began.
 */
function answeredBy(error: unknown): boolean {
  return !(error instanceof Error && error.message === 'Command timed out');
}

/** What a call held back fails with: the fail policy answers it, as it would a timeout. */
export function stalledError(stall: Stall): SluiceError {
  return new SluiceError(
    'ERR_SLUICE_STORE_UNAVAILABLE',
    `[sluice] Redis store: Redis has not answered a call sent ${Math.round(stall.sinceSentMs)} ms ago on this connection; not sending more to it until it does.`,
  );
}
