import { SluiceError } from '../errors.js';
import type { Policy, StoreRequest } from '../types.js';

/**
 * The largest sliding-window-log limit this store takes. Its log lives inline in the client's
 * entry and a decision copies it, so a decision costs O(entries); past this it is refused at
 * construction. The Redis store keeps a running total and has no such limit.
 */
export const MAX_MEMORY_LOG_LIMIT = 100_000;

/** Refuses at construction what this store cannot decide well. */
export function checkPolicies(policies: readonly Policy[]): void {
  for (const policy of policies) {
    if (policy.algorithm === 'sliding-window-log' && policy.limit > MAX_MEMORY_LOG_LIMIT) {
      throw new SluiceError(
        'ERR_SLUICE_INVALID_LIMIT',
        `[sluice] Memory store: a sliding-window-log limit may be at most ${MAX_MEMORY_LOG_LIMIT} (each decision copies the log); policy ${JSON.stringify(policy.name)} has ${policy.limit}. Use the Redis store, or another algorithm.`,
      );
    }
  }
}

/** The request's time; one that is not whole epoch ms is refused, as the Redis store does. */
export function nowOf(request: StoreRequest): number {
  const { now } = request;
  if (now === undefined) return Date.now();
  if (!Number.isSafeInteger(now) || now < 0) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_CLOCK',
      `[sluice] Memory store: the clock must return whole epoch milliseconds; received ${String(now)}.`,
    );
  }
  return now;
}
