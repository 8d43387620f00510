import { SluiceError } from '@sluice/core';

/** How often a stalled connection is sent one call, to look whether Redis answers again. */
const LOOK_EVERY_MS = 1000;

/** How a connection stands when a call is to be sent on it. */
export interface Stall {
  /**
   * How long the oldest call still unanswered on it had waited when the process last read its
   * connections: time the process spent busy, its replies unread, is not Redis's silence.
   */
  readonly waitedMs: number;
  /** How long ago a call was last sent on it. */
  readonly idleMs: number;
}

export interface StallGuard {
  /** `undefined` when no call on `connection` is unanswered. */
  stall(connection: string): Stall | undefined;
  /** Counts a call just sent on `connection` as unanswered until the function it returns is called. */
  sent(connection: string): () => void;
  /** Says the process has just read its connections: called from a `setImmediate`, which runs right after the I/O poll. */
  polled(): void;
}

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
 * A call has waited only as long as the process has been reading replies: its wait is counted
 * to the last turn of the event loop that polled for I/O (a `setImmediate` runs right after
 * that poll: the batcher's flush, or one the guard asks for), never to now. A process busy for
 * longer than a timeout (a burst of work in one turn, a GC pause) has its replies unread in the
 * socket, and must not take that for a stall.
 *
 * Once a call is answered (or fails: the connection closing fails it), the calls sent before
 * it stop counting as unanswered: Redis answers a connection's calls in order, so one left
 * over was lost, and must not stop the connection for good. Per connection: on a Cluster a
 * master that stalls stops its own slots only, and all of them at once.
 */
export function createStallGuard(): StallGuard {
  /** Per connection, its unanswered calls, oldest first, and when a call was last sent. */
  const connections = new Map<string, { calls: { readonly sentAt: number }[]; lastSentAt: number }>();
  /** When the event loop last passed its I/O poll, as far as this guard has asked. */
  let polledAt = performance.now();
  let polling = false;
  const poll = (): void => {
    polling = false;
    polledAt = performance.now();
  };
  /** Has the next turn note when it polled: one `setImmediate` a turn at most, while calls are sent. */
  const pollNext = (): void => {
    if (polling) return;
    polling = true;
    setImmediate(poll);
  };

  return {
    polled: poll,
    stall(connection) {
      const state = connections.get(connection);
      if (state === undefined) return undefined;
      pollNext();
      return {
        waitedMs: polledAt - (state.calls[0] as { sentAt: number }).sentAt,
        idleMs: performance.now() - state.lastSentAt,
      };
    },
    sent(connection) {
      let state = connections.get(connection);
      if (state === undefined) {
        state = { calls: [], lastSentAt: 0 };
        connections.set(connection, state);
      }
      const own = state;
      const call = { sentAt: performance.now() };
      own.calls.push(call);
      own.lastSentAt = call.sentAt;
      pollNext();
      return () => {
        // This call and every one sent before it; nothing if a later call's answer took them.
        const at = own.calls.indexOf(call);
        if (at < 0) return;
        own.calls.splice(0, at + 1);
        if (own.calls.length === 0 && connections.get(connection) === own) connections.delete(connection);
      };
    },
  };
}

/** Whether a caller who waits `timeoutMs` at most would give up before the calls ahead of it are answered. */
export function waitedTooLong(stall: Stall | undefined, timeoutMs: number): stall is Stall {
  return stall !== undefined && stall.waitedMs > timeoutMs;
}

/** Whether it is time to send one call on a stalled connection, to look whether Redis answers again. */
export function lookDue(stall: Stall, timeoutMs: number): boolean {
  return stall.idleMs >= Math.max(LOOK_EVERY_MS, 2 * timeoutMs);
}

/**
 * Whether a call's failure is an answer from Redis (an error reply, or its connection closing)
 * rather than ioredis's own `commandTimeout` giving up on it, which says nothing of Redis: taken
 * for an answer, it ended every stall as soon as it began.
 */
export function answered(error: unknown): boolean {
  return !(error instanceof Error && error.message === 'Command timed out');
}

/** What a call held back fails with: the fail policy answers it, as it would a timeout. */
export function stalledError(stall: Stall): SluiceError {
  return new SluiceError(
    'ERR_SLUICE_STORE_UNAVAILABLE',
    `[sluice] Redis store: Redis has not answered a call sent ${Math.round(stall.waitedMs)} ms ago on this connection; not sending more to it until it does.`,
  );
}
