import { SluiceError } from '@sluice/core';
import { describe } from '../traffic/arrival.js';

/** The measures' `limit`, checked as `createLimiter` checks a policy's. */
export function checkLimit(limit: unknown): number {
  if (!Number.isSafeInteger(limit) || (limit as number) <= 0) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_LIMIT',
      `[sluice] Option \`limit\` must be a positive whole number; received ${describe(limit)}.`,
    );
  }
  return limit as number;
}

/** A measure's span of time (`windowMs`, `bucketMs`): a positive whole number of ms, as every duration in sluice. */
export function checkMs(value: unknown, option: string): number {
  if (!Number.isSafeInteger(value) || (value as number) <= 0) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_DURATION',
      `[sluice] Option \`${option}\` must be a positive whole number of milliseconds; received ${describe(value)}.`,
    );
  }
  return value as number;
}
