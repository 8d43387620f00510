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
  | { kind: 'internal'; message: string };

const storeCodes = new Set(['ERR_SLUICE_STORE_UNAVAILABLE', 'ERR_SLUICE_STORE_TIMEOUT']);

/**
 * The one path every call takes, whichever transport it came by: parse and check, decide,
 * count, and turn errors into outcomes. A bad request is refused before anything is counted;
 * a store failure is reported, never answered with a guess.
 */
export function createCallHandler(
  decide: (call: RateLimitCall) => Promise<Decided>,
  metrics: ServiceMetrics,
  log: ServiceLog,
  onStoreFailure: (error: unknown) => void,
) {
  return async function handleCall(transport: Transport, parse: () => RateLimitCall): Promise<CallOutcome> {
    const done = metrics.start(transport);
    try {
      const { answer } = await decide(parse());
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
