import { createUnpublishedLimiter, type Logger, OUTAGE_QUIET_MS, type RateLimitStore } from '@sluice/core';

/** Between looks at a store that failed, until it answers. */
const STORE_PROBE_INTERVAL_MS = 1000;

export interface StoreHealthOptions {
  store: RateLimitStore;
  storeTimeoutMs: number;
  logger: Logger;
  /** Hears every change (read `up`); `why` says what failed when the store went down. */
  onChange(why?: string): void;
}

/**
 * Whether the store answers, as health reports it. A call the store failed marks it down;
 * from then on the service looks at the store itself every second (a decision on one fixed
 * key, through the same store, under the same timeout) until it answers with no call failed
 * for `OUTAGE_QUIET_MS`, and only that marks it up again: the look's one key lives on one
 * Cluster master, and while another is down the calls to it still fail, so the look alone
 * would report up and down again every second. The look writes, as a call does: a cost-0 look
 * took a Redis that had become a replica, or had filled up under `noeviction`, for one that
 * answers. A call's success proves nothing: an unknown domain, an unlimited descriptor or the
 * Redis store's deny cache answer without the store, and readiness probes send no calls, so
 * waiting for one left a replica out for good. No timer runs while the store is up.
 */
export function createStoreHealth(options: StoreHealthOptions) {
  const { onChange } = options;
  // Publishing nothing: each look during an outage counted as a store error, and the first
  // answered one as a decision, of a limiter no rule has (`sluice_limiter="sluice-health"`).
  const probe = createUnpublishedLimiter(
    {
      store: options.store,
      // A limit no look reaches: each look is allowed, so each writes.
      policies: [{ name: 'probe', limit: 1_000_000, window: 1000 }],
      prefix: 'sluice-health',
      onStoreError: 'throw',
      storeTimeoutMs: options.storeTimeoutMs,
      logger: options.logger,
    },
    'nothing',
  );
  let up = true;
  let closed = false;
  let lastFailureAt = 0;
  let timer: NodeJS.Timeout | undefined;

  const lookLater = (): void => {
    // Unref'd: a store that never comes back must not keep the process alive.
    timer = setTimeout(look, STORE_PROBE_INTERVAL_MS).unref();
  };
  const look = (): void => {
    probe.consume('probe').then(
      () => {
        if (closed || up) return;
        if (performance.now() - lastFailureAt < OUTAGE_QUIET_MS) return lookLater();
        up = true;
        onChange();
      },
      () => {
        if (!closed && !up) lookLater();
      },
    );
  };

  return {
    get up(): boolean {
      return up;
    },
    /** A call the store failed (an error or a timeout). */
    failed(why: string): void {
      // A call that fails while the service drains says nothing about serving: it has stopped.
      if (closed) return;
      lastFailureAt = performance.now();
      if (!up) return;
      up = false;
      onChange(why);
      if (!closed) lookLater();
    },
    close(): void {
      closed = true;
      clearTimeout(timer);
    },
  };
}
