import type { AdapterBinding } from './adapter-contract.js';
import { sfSeconds } from './structured-fields.js';

/**
 * A `Retry-After` an earlier limiter's refusal set on a request that went on past it (an
 * `onLimited` calling `next()`), raised to `waitMs`, the wait of a policy this limiter's pass
 * has just spent: the response said to come back before that policy's `t` (draft-11 §6). Read
 * from Node's response, where a refusal that can go on (Express's) writes it; a value that is
 * no number of seconds (an HTTP date another middleware set) is left as it is.
 */
export function raiseRetryAfter<Req, Res>(binding: AdapterBinding<Req, Res>, res: Res, waitMs: number): void {
  const set = binding.rawResponse(res).getHeader('retry-after');
  if (set === undefined) return;
  const seconds = Number(set);
  if (Number.isFinite(seconds) && seconds * 1000 < waitMs) binding.setHeader(res, 'Retry-After', sfSeconds(waitMs));
}
