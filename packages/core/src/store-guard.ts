import { isSluiceError, messageOf, SluiceError } from './errors.js';
import { isBadReply, notAPromise } from './store-reply.js';
import type { Logger, OnStoreError, RateLimitStore } from './types.js';

/** What a caller gets when the store failed and the fail policy is not `'throw'`. */
export const STORE_FAILED: unique symbol = Symbol('sluice.store-failed');

/**
 * An outage ends once the store has answered this long without a single failure. A store
 * that fails some calls and not others (a Cluster with one master down, a flaky network) is
 * one outage, not a new one at every failure after a success.
 */
export const OUTAGE_QUIET_MS = 2000;

/** Whether a store is in an outage, as reported to one logger, and when a call last failed. */
interface Outage {
  down: boolean;
  lastFailureAt: number;
}

/**
 * The outage of `store` as told to `logger` under `onStoreError`: the limiters of one store
 * (a rule set's, the tiers', an app's routes) report it once, not once each (fifty rules of
 * the decision service logged fifty lines of one outage). A logger or fail policy of its own
 * hears of it apart, in its own words.
 */
function outageOf(store: RateLimitStore, logger: Logger, onStoreError: OnStoreError): Outage {
  let byLogger = outages.get(store);
  if (byLogger === undefined) {
    byLogger = new WeakMap();
    outages.set(store, byLogger);
  }
  let byPolicy = byLogger.get(logger);
  if (byPolicy === undefined) {
    byPolicy = new Map();
    byLogger.set(logger, byPolicy);
  }
  let outage = byPolicy.get(onStoreError);
  if (outage === undefined) {
    outage = { down: false, lastFailureAt: 0 };
    byPolicy.set(onStoreError, outage);
  }
  return outage;
}

const outages = new WeakMap<RateLimitStore, WeakMap<Logger, Map<OnStoreError, Outage>>>();

/**
 * Runs store calls under the limiter's fail policy: each call is bounded by `timeoutMs`, a
 * failure is reported once per outage (and once when the store answers again), and a late
 * reply or rejection after a timeout is absorbed so nothing leaks as an unhandled rejection.
 * A timed-out call is never retried: the store may still have counted it. `failed` hears of
 * every failure, not once per outage (the limiter's events). The outage is the store's
 * (`outageOf`), shared by every limiter on it that reports to the same logger.
 */
export function createStoreGuard(
  store: RateLimitStore,
  onStoreError: OnStoreError,
  timeoutMs: number,
  logger: Logger,
  failed: (cause: unknown) => void,
) {
  const outage = outageOf(store, logger, onStoreError);

  const fail = (cause: unknown): typeof STORE_FAILED => {
    // A store that cannot do what was asked (the decision service's reset) is not down: the
    // caller is told, whatever the fail policy, and no outage begins.
    if (isSluiceError(cause) && cause.code === 'ERR_SLUICE_UNSUPPORTED') throw cause;
    failed(cause);
    // Wall time for the log's cadence only; no decision depends on it.
    outage.lastFailureAt = Date.now();
    if (!outage.down) {
      outage.down = true;
      const why = messageOf(cause);
      logger.warn(
        `[sluice] WRN_SLUICE_STORE_UNAVAILABLE: store "${store.name}" failed (${why}); requests are ${onStoreError === 'allow' ? 'allowed' : onStoreError === 'deny' ? 'denied' : 'failing'} until it answers again.`,
      );
    }
    if (onStoreError === 'throw') {
      const code = isTimeout(cause) ? 'ERR_SLUICE_STORE_TIMEOUT' : 'ERR_SLUICE_STORE_UNAVAILABLE';
      throw new SluiceError(code, `[sluice] Store "${store.name}" could not decide: ${messageOf(cause)}`, { cause });
    }
    return STORE_FAILED;
  };

  const succeed = <T>(value: T): T => {
    // Compared, not read as a condition: one comparison on every decision, where testing the
    // value as a condition checks its type first (some 2 instructions).
    if (outage.down === true && Date.now() - outage.lastFailureAt >= OUTAGE_QUIET_MS) {
      outage.down = false;
      logger.warn(`[sluice] WRN_SLUICE_STORE_RECOVERED: store "${store.name}" answers again.`);
    }
    return value;
  };

  /**
   * One promise per call, settled by whichever comes first: the store's answer, read by
   * `answered`, or the timer. Whatever comes second is ignored, and a late rejection is
   * absorbed here. A failure settles it with `unavailable(cause)` under the fail policy, or
   * rejects when the policy is 'throw'. Reading the answer here, not after another `then`,
   * saves each remote decision a promise and a turn of the microtask queue. An answer that
   * comes after the timer goes to `late`, if given (a charge to give back).
   */
  function guardedRead<T, U>(
    call: () => Promise<T>,
    answered: (value: T) => U,
    unavailable: (cause: unknown) => U,
    late?: (value: T) => void,
  ): Promise<U> {
    let pending: Promise<T>;
    try {
      pending = call();
      // Read before any timer is set: `then` of something else would throw inside the timed
      // promise, uncoded and leaving its timer to report a timeout that never was.
      if (typeof pending?.then !== 'function') throw notAPromise(pending);
    } catch (cause) {
      return new Promise((resolve, reject) => settleFailure(cause, unavailable, resolve, reject));
    }
    if (store.local === true) {
      return pending.then(
        (value) => {
          let read: U;
          try {
            read = answered(value);
          } catch (error) {
            if (!isBadReply(error)) throw error;
            fail(error);
            return unavailable(error);
          }
          succeed(value);
          return read;
        },
        (cause: unknown) => {
          fail(cause);
          return unavailable(cause);
        },
      );
    }
    return new Promise((resolve, reject) => {
      let settled = false;
      const failed = (cause: unknown) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        settleFailure(cause, unavailable, resolve, reject);
      };
      // Referenced: a caller awaits this call, so the process lives until the fail policy answers.
      const timer = setTimeout(() => failed(new StoreTimeout(timeoutMs)), timeoutMs);
      pending.then((value) => {
        if (settled) {
          // Nobody awaits this: what `late` throws (a reply of the wrong shape) is dropped.
          try {
            late?.(value);
          } catch {}
          return;
        }
        settled = true;
        clearTimeout(timer);
        // Read before the store counts as answering: a reply that is no decision is its
        // failure, under the fail policy, and never first logged as a recovery.
        let read: U;
        try {
          read = answered(value);
        } catch (error) {
          if (isBadReply(error)) settleFailure(error, unavailable, resolve, reject);
          else reject(error);
          return;
        }
        succeed(value);
        resolve(read);
      }, failed);
    });
  }

  /** A store call under the fail policy: its answer, or `STORE_FAILED`. */
  const guarded = <T>(call: () => Promise<T>): Promise<T | typeof STORE_FAILED> =>
    guardedRead<T, T | typeof STORE_FAILED>(call, answeredAsIs, storeFailed);

  /** `fail` settling a call: with `unavailable(cause)`, or a rejection when the policy is 'throw'. */
  const settleFailure = <U>(
    cause: unknown,
    unavailable: (cause: unknown) => U,
    resolve: (value: U) => void,
    reject: (error: unknown) => void,
  ): void => {
    try {
      fail(cause);
      resolve(unavailable(cause));
    } catch (error) {
      reject(error);
    }
  };

  return { guarded, guardedRead, fail, succeed };
}

const answeredAsIs = <T>(value: T): T => value;
const storeFailed = (): typeof STORE_FAILED => STORE_FAILED;

class StoreTimeout extends Error {
  constructor(ms: number) {
    super(`no answer within ${ms} ms`);
  }
}

export const isTimeout = (cause: unknown): boolean => cause instanceof StoreTimeout;
