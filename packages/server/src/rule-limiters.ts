import { createRuleLimiters, type Limiter, type Logger, type RateLimitStore, type RuleLike } from '@sluice/core';

export interface LimiterSettings {
  store: RateLimitStore;
  storeTimeoutMs: number;
  clock: (() => number) | undefined;
  logger: Logger;
}

/**
 * The limiter of each rule (or override variant, `override-rules.ts`): core's rule limiters,
 * as the adapters have them, under the same namespaces (the rule's id, from its place), so a
 * changed limit, window or algorithm keeps what each client has spent, and the service and
 * adapters on one Redis share counts.
 */
export function createServiceLimiters(settings: LimiterSettings): (rule: RuleLike) => Limiter {
  return createRuleLimiters({
    store: settings.store,
    // The service answers a store failure with a gRPC error: the caller's own fail policy
    // (Envoy's `failure_mode_deny`, the Node client's `onStoreError`) then decides.
    onStoreError: 'throw',
    storeTimeoutMs: settings.storeTimeoutMs,
    ...(settings.clock === undefined ? {} : { clock: settings.clock }),
    logger: settings.logger,
  });
}
