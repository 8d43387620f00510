import { invalid } from '@sluice/core';

/** The measures' `limit`, checked as `createLimiter` checks a policy's. */
export function checkLimit(limit: unknown): number {
  if (!Number.isSafeInteger(limit) || (limit as number) <= 0)
    invalid('ERR_SLUICE_INVALID_LIMIT', 'limit', limit, 'a positive whole number');
  return limit as number;
}

/** A measure's span of time (`windowMs`, `bucketMs`): a positive whole number of ms, as every duration in sluice. */
export function checkMs(value: unknown, option: string): number {
  if (!Number.isSafeInteger(value) || (value as number) <= 0)
    invalid('ERR_SLUICE_INVALID_DURATION', option, value, 'a positive whole number of milliseconds');
  return value as number;
}
