import { describe, isSluiceError, SluiceError } from '../errors.js';
import type { PolicyOptions } from '../types.js';
import type { WarnOnce } from './warnings.js';

/**
 * What the user's `key`, `cost` and `policies` functions return is checked here, per request,
 * so an error names the function that returned it rather than an option of the limiter.
 */

/**
 * A key as the store takes it: a string as is, a whole number (a numeric user id) as its
 * decimal string. An empty string is refused like `undefined`: it comes from a missing header
 * or claim (`req.get('x-api-key') ?? ''`), and as a key it would put everyone it reaches on one
 * shared quota.
 */
export function keyFromUser(value: unknown): string {
  if (typeof value === 'string' && value !== '') return value;
  if (typeof value === 'number' && Number.isSafeInteger(value)) return String(value);
  throw new SluiceError(
    'ERR_SLUICE_INVALID_KEY',
    `[sluice] Your \`key\` function returned ${describe(value)} for this request; it must return a non-empty string (a whole number is taken as its decimal string).`,
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
 * Whether a `skip` or `allowList` function's answer lets the request go uncounted: only
 * `true`. Nothing (`undefined`, `null`: a function that returns only to skip) counts it, as
 * `false` does. Any other answer (`'false'`, `1`, an object) is a mistake that truthiness
 * would read as "skip": it counts the request, the safe side, and is warned about once, under
 * a code of its own, so that a hook's failure logged first never hides it.
 */
export function skipsFromUser(value: unknown, name: 'skip' | 'allowList', warn: WarnOnce): boolean {
  if (value === true) return true;
  if (value !== false && value !== undefined && value !== null) {
    warn(
      'WRN_SLUICE_NOT_BOOLEAN',
      `\`${name}\` returned ${describe(value)}, neither true nor false, so the request is counted.`,
    );
  }
  return false;
}

/**
 * The limiter for what a `policies` function returned. A tier missing from a lookup such as
 * `tiers[plan]` gives `undefined`, which would otherwise be reported against option `policies`.
 */
export function tierFromUser<Entry>(
  value: unknown,
  entryFor: (list: readonly PolicyOptions[]) => Entry,
  source: 'policies' | 'limit' = 'policies',
): Entry {
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
      `[sluice] Your \`${source}\` function returned ${source === 'limit' ? 'a limit that is' : 'policies that are'} not valid for this request: ${reason}`,
      { cause: error },
    );
  }
}
