import { describe, isSluiceError, SluiceError } from '../errors.js';
import type { PolicyOptions } from '../types.js';

/**
 * What the user's `key`, `cost` and `policies` functions return is checked here, per request,
 * so an error names the function that returned it rather than an option of the limiter.
 */

/** A key as the store takes it: a string as is, a whole number (a numeric user id) as its decimal string. */
export function keyFromUser(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isSafeInteger(value)) return String(value);
  throw new SluiceError(
    'ERR_SLUICE_INVALID_KEY',
    `[sluice] Your \`key\` function returned ${describe(value)} for this request; it must return a string (a whole number is taken as its decimal string).`,
  );
}

export function costFromUser(value: unknown): number {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value > 0) return value;
  throw new SluiceError(
    'ERR_SLUICE_INVALID_COST',
    `[sluice] Your \`cost\` function returned ${describe(value)} for this request; it must return a positive whole number.`,
  );
}

/**
 * What a `skip` or `allowList` function answered: true or false, never judged by truthiness,
 * where `'false'`, `1` or an object would skip the request or allow the client uncounted.
 */
export function booleanFromUser(value: unknown, name: 'skip' | 'allowList'): boolean {
  if (typeof value === 'boolean') return value;
  throw new SluiceError(
    'ERR_SLUICE_NOT_BOOLEAN',
    `[sluice] Your \`${name}\` function returned ${describe(value)} for this request; it must return true or false (or a promise of one).`,
  );
}

/**
 * The limiter for what a `policies` function returned. A tier missing from a lookup such as
 * `tiers[plan]` gives `undefined`, which would otherwise be reported against option `policies`.
 */
export function tierFromUser<Entry>(value: unknown, entryFor: (list: readonly PolicyOptions[]) => Entry): Entry {
  if (!Array.isArray(value) || value.length === 0) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_POLICIES',
      `[sluice] Your \`policies\` function returned ${Array.isArray(value) ? 'an empty array' : describe(value)} for this request; it must return a non-empty array of policies. A tier missing from a lookup such as \`tiers[plan]\` gives undefined.`,
    );
  }
  try {
    return entryFor(value);
  } catch (error) {
    if (!isSluiceError(error)) throw error;
    const reason = error.message.replace(/^\[sluice\] /, '');
    throw new SluiceError(
      error.code,
      `[sluice] Your \`policies\` function returned policies that are not valid for this request: ${reason}`,
      { cause: error },
    );
  }
}
