import { describe, SluiceError } from '../errors.js';
import { POLICY_OPTION_NAMES } from '../known-options.js';
import { toPolicy } from '../policy.js';
import { isThenable } from '../thenable.js';
import type { PolicyOptions } from '../types.js';
import type { LimitFor, PoliciesFor } from './http-options.js';

/** Distinct limits whose policy list is kept; a function returning more is answered afresh. */
const MAX_CACHED_LIMITS = 1024;

/**
 * `limit` as a function of the request and key (express-rate-limit's `limit`,
 * @fastify/rate-limit's `max`): a tier per distinct limit, the other policy options fixed.
 * Each limit maps to one policy list object, so the tier lookup after it is an identity hit
 * and a repeated result costs one `Map` read. A result that is not a positive whole number
 * rejects that request with `ERR_SLUICE_INVALID_LIMIT`, naming the function.
 */
export function limitFunctionPolicies<Req>(options: Record<string, unknown>): PoliciesFor<Req> {
  const limitOf = options.limit as LimitFor<Req>;
  const fields: Record<string, unknown> = {};
  for (const name of POLICY_OPTION_NAMES)
    if (name !== 'limit' && options[name] !== undefined) fields[name] = options[name];
  // The fixed options are checked now, with a stand-in limit, so a bad window fails at start-up.
  toPolicy({ ...fields, limit: 1 } as PolicyOptions, 'options');
  const lists = new Map<unknown, readonly PolicyOptions[]>();
  const listFor = (limit: unknown): readonly PolicyOptions[] => {
    let list = lists.get(limit);
    if (list === undefined && (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit <= 0)) {
      throw new SluiceError(
        'ERR_SLUICE_INVALID_LIMIT',
        `[sluice] Your \`limit\` function returned ${describe(limit)} for this request; it must return a positive whole number.`,
      );
    }
    if (list === undefined) {
      list = [{ ...fields, limit } as PolicyOptions];
      if (lists.size < MAX_CACHED_LIMITS) lists.set(limit, list);
    }
    return list;
  };
  return (req, key) => {
    const limit = limitOf(req, key);
    return isThenable(limit) ? Promise.resolve(limit).then(listFor) : listFor(limit);
  };
}
