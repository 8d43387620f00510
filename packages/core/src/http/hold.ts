import type { ServerResponse } from 'node:http';
import type { QueueHeldEvent } from '../event-types.js';
import { publishQueueEvent } from '../events.js';

/**
 * Holds a queued request for `delayMs`. Resolves `true` when the time is up and `false` as
 * soon as the response closes first (the client went away): the timer is cleared then, so
 * nothing fires later into a dead response. The hold is published on `sluice:queue` under
 * the name of the `limiter` that queued it, the name its decisions are published under.
 */
export function hold(res: ServerResponse, delayMs: number, limiter: string): Promise<boolean> {
  if (res.destroyed || res.writableEnded) return Promise.resolve(false);
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
    const gone = (): void => {
      clearTimeout(timer);
      resolve(release(false));
    };
    const timer = setTimeout(() => {
      res.off('close', gone);
      resolve(release(true));
    }, delayMs);
    res.once('close', gone);
  });
}
