import type { ServerResponse } from 'node:http';

/**
 * Holds a queued request for `delayMs`. Resolves `true` when the time is up and `false` as
 * soon as the response closes first (the client went away): the timer is cleared then, so
 * nothing fires later into a dead response.
 */
export function hold(res: ServerResponse, delayMs: number): Promise<boolean> {
  if (res.destroyed || res.writableEnded) return Promise.resolve(false);
  return new Promise((resolve) => {
    const gone = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      res.off('close', gone);
      resolve(true);
    }, delayMs);
    res.once('close', gone);
  });
}
