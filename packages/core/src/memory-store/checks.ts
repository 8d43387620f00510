import { SluiceError } from '../errors.js';

/** A request's time (`StoreRequest.now`); one that is not whole epoch ms is refused, as the Redis store does. */
export function nowOf(now: number | undefined): number {
  if (now === undefined) return Date.now();
  if (!Number.isSafeInteger(now) || now < 0) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_CLOCK',
      `[sluice] Memory store: the clock must return whole epoch milliseconds; received ${String(now)}.`,
    );
  }
  return now;
}
