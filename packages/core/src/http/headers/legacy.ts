import { sfInteger } from '../structured-fields.js';
import type { Headline } from './effective-window.js';

/**
 * The de-facto `X-RateLimit-*` fields. Peers disagree on what `Reset` means; sluice sends the
 * Unix time in seconds (rounded up) at which the headline policy's wait ends, the most
 * common reading among public APIs.
 */
export function legacyFields(headline: Headline, nowMs: number): [string, string][] {
  return [
    ['X-RateLimit-Limit', sfInteger(headline.limit)],
    ['X-RateLimit-Remaining', sfInteger(headline.remaining)],
    ['X-RateLimit-Reset', sfInteger((nowMs + headline.waitMs) / 1000)],
  ];
}
