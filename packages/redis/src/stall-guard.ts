import { SluiceError } from '@sluice/core';

/** How often a stalled connection is sent one call, to look whether Redis answers again. */
const LOOK_EVERY_MS = 1000;

/** How a connection stands when a call is to be sent on it. */
export interface Stall {
  /** How long the oldest call still unanswered on it has waited. */
  readonly waitedMs: number;
  /** How long ago a call was last sent on it. */
  readonly idleMs: number;
}

export interface StallGuard {
  /** `undefined` when no call on `connection` is unanswered. */
  stall(connection: string): Stall | undefined;
  /** Counts a call just sent on `connection` as unanswered until `answered` is called. */
  sent(connection: string): () => void;
}

/**
 * Watches for a Redis that has stopped answering while its connection stays open (a paused or
 * frozen server, a host gone without a reset). A call its caller gave up on after the
 * limiter's `storeTimeoutMs` would still wait in the connection and run, charging its client,
 * once Redis resumes, though the fail policy answered it long before; and every call sent
 * meanwhile is held in the process. So a call is not sent (`holdsBack`) while the oldest
 * unanswered call on its connection has waited longer than the call's own timeout, but for
 * one a second (or two timeouts, if longer), which looks whether Redis answers again.
 *
 * Once a call is answered (or fails: the connection closing fails it), the calls sent before
 * it stop counting as unanswered: Redis answers a connection's calls in order, so one left
 * over was lost, and must not stop the connection for good. Per connection: on a Cluster a
 * master that stalls stops its own slots only, and all of them at once.
 */
export function createStallGuard(): StallGuard {
  /** Per connection, its unanswered calls, oldest first, and when a call was last sent. */
  const connections = new Map<string, { calls: { readonly sentAt: number }[]; lastSentAt: number }>();

  return {
    stall(connection) {
      const state = connections.get(connection);
      if (state === undefined) return undefined;
      const now = performance.now();
      return { waitedMs: now - (state.calls[0] as { sentAt: number }).sentAt, idleMs: now - state.lastSentAt };
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

/** Whether a call whose caller waits `timeoutMs` at most is held back on a connection that stands so. */
export function holdsBack(stall: Stall | undefined, timeoutMs: number): stall is Stall {
  return stall !== undefined && stall.waitedMs > timeoutMs && stall.idleMs < Math.max(LOOK_EVERY_MS, 2 * timeoutMs);
}

/** What a call held back fails with: the fail policy answers it, as it would a timeout. */
export function stalledError(stall: Stall): SluiceError {
  return new SluiceError(
    'ERR_SLUICE_STORE_UNAVAILABLE',
    `[sluice] Redis store: Redis has not answered a call sent ${Math.round(stall.waitedMs)} ms ago on this connection; not sending more to it until it does.`,
  );
}
