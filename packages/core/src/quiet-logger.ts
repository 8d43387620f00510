import { isThenable } from './thenable.js';
import type { Logger } from './types.js';

const ignore = (): void => {};

/**
 * `logger`, safe to call where a failure has nowhere to go: a request's path, a store's
 * promise callbacks, a timer. A `warn` that throws (an unbound method, a broken transport)
 * or returns a promise that rejects (an async logger) loses that line and nothing else:
 * sluice's warnings never throw into a request nor leak an unhandled rejection. The same
 * logger gives the same quiet one.
 */
export function quietLogger(logger: Logger): Logger {
  let quiet = quietened.get(logger);
  if (quiet === undefined) {
    quiet = {
      warn(message) {
        try {
          const returned: unknown = logger.warn(message);
          if (isThenable(returned)) returned.then(undefined, ignore);
        } catch {}
      },
    };
    quietened.set(logger, quiet);
  }
  return quiet;
}

/** One quiet logger per logger: the limiters given one logger share what they report to it (`store-guard.ts`). */
const quietened = new WeakMap<Logger, Logger>();
