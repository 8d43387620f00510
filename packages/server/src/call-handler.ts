import { isSluiceError } from '@sluice/core';
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

const storeCodes = new Set(['ERR_SLUICE_STORE_UNAVAILABLE', 'ERR_SLUICE_STORE_TIMEOUT']);
const cancelled: CallOutcome = { kind: 'cancelled', message: 'the caller left before the answer' };

/**
 * The one path every call takes, whichever transport it came by: parse and check, decide,
 * count, and turn errors into outcomes. A bad request is refused before anything is counted;
 * a store failure is reported, never answered with a guess.
 *
 * `gone(caller)` says whether the caller has left (a cancelled gRPC call, its deadline past, a
 * closed connection): no answer can reach it, so a call found gone on arrival is not decided,
 * and one found gone once decided gets its charge back. The check on arrival alone is not
 * enough: a caller's cancel (Envoy's at its `timeout`) mostly lands while the call waits on the
 * store, after it was charged. `gone` takes the caller rather than closing over it, so the
 * check allocates nothing.
 */
export function createCallHandler(
  decider: CallDecider,
  metrics: ServiceMetrics,
  log: ServiceLog,
  onStoreFailure: (error: unknown) => void,
) {
  return async function handleCall<C>(
    transport: Transport,
    parse: () => RateLimitCall,
    caller: C,
    gone: (caller: C) => boolean,
  ): Promise<CallOutcome> {
    const done = metrics.start(transport);
    if (gone(caller)) {
      done('cancelled');
      return cancelled;
    }
    try {
      const decided = await decider.decide(parse());
      if (gone(caller)) {
        await decider.giveBack(decided);
        done('cancelled');
        return cancelled;
      }
      const { answer } = decided;
      done(answer.overallCode === 'OK' ? 'ok' : 'over_limit');
      return { kind: 'answer', answer };
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      if (isSluiceError(error) && error.code === 'ERR_SLUICE_INVALID_REQUEST') {
        done('invalid');
        return { kind: 'invalid', message };
      }
      done('unavailable');
      if (isSluiceError(error) && storeCodes.has(error.code)) {
        onStoreFailure(error);
        return { kind: 'unavailable', message };
      }
      log.line('error', 'ShouldRateLimit failed', { transport, error: message });
      return { kind: 'internal', message };
    }
  };
}

export type CallHandler = ReturnType<typeof createCallHandler>;
