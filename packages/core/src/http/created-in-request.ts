import type { Logger } from '../types.js';
import { createWarnOnce } from './warnings.js';

/** Loggers already told, so a limiter created on every request warns once, not per request. */
const told = new WeakSet<Logger>();

/**
 * A limiter created while the framework is dispatching a request (its dispatch frame on the
 * stack) was created inside a handler: a new one for every request, each with a fresh count,
 * so it never limits. Checked once per limiter, at construction; only a synchronous creation
 * shows on the stack.
 */
export function warnIfCreatedInRequest(dispatchFrame: RegExp | undefined, logger: Logger): void {
  if (dispatchFrame === undefined || told.has(logger)) return;
  const { stack } = new Error();
  if (stack === undefined || !dispatchFrame.test(stack)) return;
  told.add(logger);
  createWarnOnce(logger)(
    'WRN_SLUICE_CREATED_IN_REQUEST',
    'a rate limiter was created while a request was being handled. Created per request, each limiter starts a fresh count and never limits: create it once at start-up, mount it with `app.use(...)`, and reuse it.',
  );
}
