import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { QueueHeldEvent } from '../event-types.js';
import { publishQueueEvent } from '../events.js';
import type { Limiter } from '../types.js';

/**
 * Holds a queued request for `delayMs`. Resolves `true` when the time is up and `false` as
 * soon as the response closes first (the client went away): the timer is cleared then, so
 * nothing fires later into a dead response. The hold is published on `sluice:queue` under
 * the name of the `limiter` that queued it, the name its decisions are published under.
 */
export function hold(res: ServerResponse, delayMs: number, limiter: string): Promise<boolean> {
  // A response pipelined behind another is not its socket's yet, and does not close when its
  // client leaves: the socket does.
  const socket = res.req?.socket;
  if (res.destroyed || res.writableEnded || socket?.destroyed) return Promise.resolve(false);
  const heldAt = performance.now();
  const begun = publishQueueEvent((): QueueHeldEvent => ({ phase: 'held', limiter, delayMs }));
  const release = (completed: boolean): boolean => {
    publishQueueEvent(() => {
      const heldMs = performance.now() - heldAt;
      return { phase: 'released', limiter, delayMs, heldMs, completed, hold: begun };
    });
    return completed;
  };
  return new Promise((resolve) => {
    const end = (completed: boolean): void => {
      clearTimeout(timer);
      res.off('close', gone);
      if (socket !== undefined) waiters.get(socket)?.delete(gone);
      resolve(release(completed));
    };
    const gone = (): void => end(false);
    const timer = setTimeout(() => end(true), delayMs);
    res.once('close', gone);
    if (socket !== undefined) whenClosed(socket).add(gone);
  });
}

/**
 * What to call when a socket closes, for the requests held on it: one listener a socket, so
 * a client pipelining many queued requests adds no listener each (Node warns past ten).
 */
const waiters = new WeakMap<Socket, Set<() => void>>();
const whenClosed = (socket: Socket): Set<() => void> => {
  let set = waiters.get(socket);
  if (set === undefined) {
    const created = new Set<() => void>();
    socket.once('close', () => {
      waiters.delete(socket);
      for (const gone of created) gone();
    });
    waiters.set(socket, created);
    set = created;
  }
  return set;
};

/** When a charge was made: between `chargedAt` (the ask) and `answeredAt` (its answer). */
export interface ChargeDates {
  readonly chargedAt: number;
  readonly answeredAt: number;
}

/**
 * The dates a queue slot its request never used is given back by, `now` being the clock. A
 * one-policy limiter's queued charge holds its slot from the time it was booked for (the ask
 * and `delayMs`), no later than now: dated at the ask, the hold counted as time it had
 * refilled, and the slot went partly unused. A limiter of several policies keeps the charge's
 * dates, which each of them can bear.
 */
export function unusedSlotDates(
  limiter: Limiter | undefined,
  charged: ChargeDates,
  delayMs: number,
  now: number,
): ChargeDates {
  if (limiter?.policies.length !== 1 || delayMs === 0) return charged;
  const at = Math.min(now, charged.chargedAt + delayMs);
  return { chargedAt: at, answeredAt: at };
}
