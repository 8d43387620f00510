import { messageOf, SluiceError } from '../errors.js';
import { isThenable } from '../thenable.js';
import type { Decision } from '../types.js';
import type { WarnOnce } from './warnings.js';

/** @fastify/rate-limit's hooks: told, not asked; the response stays sluice's or `onLimited`'s. */
export interface NotificationOptions<Req> {
  /** Called for each counted request within the limit. */
  onExceeding?: ((req: Req, decision: Decision) => unknown) | undefined;
  /** Called for each request over the limit: refused, banned, or let through by soft, elastic or shadow throttling. */
  onExceeded?: ((req: Req, decision: Decision) => unknown) | undefined;
}

export type Notify<Req> = (req: Req, decision: Decision) => void;

/**
 * A hook's failure is logged (once per middleware) and never changes the response: a
 * notification must not take a request down.
 */
export function checkNotifications<Req>(options: Record<string, unknown>, warn: WarnOnce): Notify<Req> | undefined {
  const hooks: Record<string, unknown> = { onExceeding: options.onExceeding, onExceeded: options.onExceeded };
  for (const [name, hook] of Object.entries(hooks)) {
    if (hook !== undefined && typeof hook !== 'function') {
      throw new SluiceError(
        'ERR_SLUICE_INVALID_HANDLER',
        `[sluice] Option \`${name}\` must be a function of the request and the decision.`,
      );
    }
  }
  const { onExceeding, onExceeded } = hooks as NotificationOptions<Req>;
  if (onExceeding === undefined && onExceeded === undefined) return undefined;
  const failed = (name: string) => (error: unknown) =>
    warn('WRN_SLUICE_CALLBACK_FAILED', `\`${name}\` failed and was ignored: ${messageOf(error)}`);
  const call = (name: string, hook: NotificationOptions<Req>['onExceeding'], req: Req, decision: Decision) => {
    if (hook === undefined) return;
    try {
      const result = hook(req, decision);
      if (isThenable(result)) Promise.resolve(result).catch(failed(name));
    } catch (error) {
      failed(name)(error);
    }
  };
  return (req, decision) => {
    if (decision.reason === 'store-unavailable') return;
    const over = !decision.allowed || decision.overLimit !== undefined;
    if (over) call('onExceeded', onExceeded, req, decision);
    else call('onExceeding', onExceeding, req, decision);
  };
}
