import { isSluiceError, messageOf } from '@sluice/core';
import type { Decided } from './decider.js';
import type { ServiceLog } from './log.js';
import type { ServiceMetrics, Transport } from './metrics.js';
import type { RateLimitAnswer, RateLimitCall } from './wire-types.js';

/** What a front end sends back for one call, before its own encoding. */
export type CallOutcome =
  | { kind: 'answer'; answer: RateLimitAnswer }
  | { kind: 'invalid'; message: string }
  | { kind: 'unavailable'; message: string }
  | { kind: 'internal'; message: string }
  | { kind: 'cancelled'; message: string };

/** What the handler asks of the decider. */
export interface CallDecider {
  decide(call: RateLimitCall): Promise<Decided>;
  /** Gives back what a decided call charged; never rejects. */
  giveBack(decided: Decided): Promise<unknown>;
}

const cancelled: CallOutcome = { kind: 'cancelled', message: 'the caller left before the answer' };
/**
 * A failure of the service's own answers the caller this and no more: its message may name
 * the service's internals (files, addresses, a dependency's state), which the log keeps.
 */
const internal: CallOutcome = { kind: 'internal', message: 'the call could not be decided; the service logged why' };
/** A store's failure, told as plainly: its message is the store's own (Redis's `OOM …`, an address). */
const storeFailed = new Map<string, CallOutcome>([
  ['ERR_SLUICE_STORE_TIMEOUT', { kind: 'unavailable', message: 'the rate-limit store did not answer in time' }],
  [
    'ERR_SLUICE_STORE_UNAVAILABLE',
    { kind: 'unavailable', message: 'the rate-limit store failed; the service logged why' },
  ],
]);

/**
 * The one path every call takes, whichever transport it came by: parse and check, decide,
 * count, and turn errors into outcomes. A bad request is refused before anything is counted;
 * a store failure is reported, never answered with a guess.
 *
 * `gone(caller)` says whether the caller has left (a cancelled gRPC call, its deadline past, a
 * connection reset): no answer can reach it, and the call counts as `cancelled`. What the
 * caller then did with its request is the proxy's setting. By default (Envoy's
 * `failure_mode_deny: false`) it let the request through, so the call is decided and charged
 * as any other. With `failureModeDeny` it refused the request: a call found gone on arrival is
 * not decided, and one found gone once decided gets its charge back (the check on arrival
 * alone is not enough: a caller's cancel mostly lands while the call waits on the store, after
 * it was charged). `gone` takes the caller rather than closing over it, so the check allocates
 * nothing.
 *
 * `drained()` resolves once no call is in the handler: a call its caller left holds no stream
 * or connection open, so the servers' own shutdown does not wait for its decision or refund.
 */
export function createCallHandler(
  decider: CallDecider,
  metrics: ServiceMetrics,
  log: ServiceLog,
  onStoreFailure: (error: unknown) => void,
  failureModeDeny: boolean,
) {
  let inHandler = 0;
  let release: (() => void) | undefined;
  let draining: Promise<void> | undefined;

  /** One call fewer in the handler: the last one out lets `drained()` resolve. */
  const left = (): void => {
    if (--inHandler > 0 || release === undefined) return;
    release();
    release = undefined;
    draining = undefined;
  };

  async function handleCall<C>(
    transport: Transport,
    parse: () => RateLimitCall,
    caller: C,
    gone: (caller: C) => boolean,
  ): Promise<CallOutcome> {
    const done = metrics.start(transport);
    inHandler++;
    try {
      if (failureModeDeny && gone(caller)) {
        done('cancelled');
        return cancelled;
      }
      const decided = await decider.decide(parse());
      if (gone(caller)) {
        if (failureModeDeny) await decider.giveBack(decided);
        done('cancelled');
        return cancelled;
      }
      const { answer } = decided;
      done(!decided.refused ? 'ok' : answer.overallCode === 'OK' ? 'shadow' : 'over_limit');
      return { kind: 'answer', answer };
    } catch (error) {
      const message = messageOf(error);
      if (isSluiceError(error) && error.code === 'ERR_SLUICE_INVALID_REQUEST') {
        done('invalid');
        return { kind: 'invalid', message };
      }
      const failed = isSluiceError(error) ? storeFailed.get(error.code) : undefined;
      if (failed !== undefined) {
        done('unavailable');
        onStoreFailure(error);
        return failed;
      }
      // Counted apart from the store's failures, which an operator's alert on `unavailable` watches.
      done('internal');
      log.line('error', 'ShouldRateLimit failed', { transport, error: message });
      return internal;
    } finally {
      left();
    }
  }

  const drained = (): Promise<void> => {
    if (inHandler === 0) return Promise.resolve();
    draining ??= new Promise((resolve) => {
      release = resolve;
    });
    return draining;
  };

  return { handleCall, drained };
}

export type CallHandler = ReturnType<typeof createCallHandler>['handleCall'];
