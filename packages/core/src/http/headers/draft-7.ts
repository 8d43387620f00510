import type { Policy } from '../../types.js';
import { sfInteger, sfSeconds } from '../structured-fields.js';
import type { Headline } from './effective-window.js';

/**
 * draft-6 and draft-7 share this policy field: a List of Integer items, the quota with its
 * window in seconds, no names. `RateLimit-Policy: 10;w=1, 1000;w=86400`
 */
export function draft7PolicyField(policies: readonly Policy[]): string {
  return policies.map((p) => `${sfInteger(p.limit)};w=${sfSeconds(p.windowMs)}`).join(', ');
}

/** draft-7's combined Dictionary for the headline policy: `RateLimit: limit=10, remaining=7, reset=1` */
export function draft7RateLimitField(headline: Headline): string {
  return `limit=${sfInteger(headline.limit)}, remaining=${sfInteger(headline.remaining)}, reset=${sfSeconds(headline.waitMs)}`;
}
