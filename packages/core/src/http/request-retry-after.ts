import type { Decision } from '../types.js';
import type { AdapterBinding } from './adapter-contract.js';
import type { RequestWaits } from './first-visit.js';
import { spentWaitMs } from './headers/effective-window.js';
import { sfSeconds } from './structured-fields.js';

/**
 * A refusal's `Retry-After`, noted in `waits` for the limiters after this one on the request
 * where the refusal can go on (`waits` given only where an `onLimited` may call `next()`): a
 * later limiter refused it too, and its shorter wait replaced this one, under a `RateLimit`
 * item still saying this policy is spent longer. The default refusal ends the request, and
 * noting its wait would add a property to every refused request.
 */
export function writeRefusalWait<Req, Res>(
  binding: AdapterBinding<Req, Res>,
  res: Res,
  request: object,
  waitMs: number,
  waits: RequestWaits | undefined,
): void {
  binding.setHeader(res, 'Retry-After', sfSeconds(waitMs));
  waits?.note(request, waitMs);
}

/**
 * After a pass, the wait of a policy it spent (`spentWaitMs`), noted for the limiters after
 * this one on the request, and raised into a `Retry-After` an earlier limiter's refusal set on
 * a request that went on past it (an `onLimited` calling `next()`): the response said to come
 * back before that policy's `t` (draft-11 §6). Read from Node's response, where a refusal that
 * can go on (Express's) writes it; a value that is no number of seconds (an HTTP date another
 * middleware set) is left as it is.
 */
export function noteSpentWait<Req, Res>(
  binding: AdapterBinding<Req, Res>,
  res: Res,
  request: object,
  decision: Decision,
  waits: RequestWaits,
): void {
  const spentMs = spentWaitMs(decision);
  if (spentMs === 0) return;
  waits.note(request, spentMs);
  const set = binding.rawResponse(res).getHeader('retry-after');
  if (set === undefined) return;
  const seconds = Number(set);
  if (Number.isFinite(seconds) && seconds * 1000 < spentMs) binding.setHeader(res, 'Retry-After', sfSeconds(spentMs));
}
