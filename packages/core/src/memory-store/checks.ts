import { isEpochMs } from '../epoch-ms.js';
import { describe, SluiceError } from '../errors.js';

/** A request's time (`StoreRequest.now`); one that is not whole epoch ms is refused, as the Redis store does. */
export function nowOf(now: number | undefined): number {
  if (now === undefined) return Date.now();
  if (!isEpochMs(now)) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_CLOCK',
      `[sluice] Memory store: the clock must return whole epoch milliseconds from 0 to 2^50; received ${describe(now)}.`,
    );
  }
  return now;
}

/**
 * A request's cost (`StoreRequest.cost`): a whole number, 0 for a peek. The limiter checks its
 * own; a caller of the store's methods is checked here, as the Redis store checks it: a negative
 * count would mint quota, and a NaN left in a state refuses its client for good.
 */
export function costOf(cost: number): number {
  if (!Number.isSafeInteger(cost) || cost < 0) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_COST',
      `[sluice] Memory store: a cost must be a whole number of 0 or more; received ${describe(cost)}.`,
    );
  }
  return cost;
}

/** What `run` returns, or throws, as a promise: a method that returns one never throws. */
export function settled<T>(run: () => T): Promise<T> {
  try {
    return Promise.resolve(run());
  } catch (error) {
    return Promise.reject(error);
  }
}
