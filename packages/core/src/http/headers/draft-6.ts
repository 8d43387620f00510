import { sfInteger, sfSeconds } from '../structured-fields.js';
import type { Headline } from './effective-window.js';

/** draft-6's three Integer fields for the headline policy; its policy field is draft-7's. */
export function draft6Fields(headline: Headline): [string, string][] {
  return [
    ['RateLimit-Limit', sfInteger(headline.limit)],
    ['RateLimit-Remaining', sfInteger(headline.remaining)],
    ['RateLimit-Reset', sfSeconds(headline.waitMs)],
  ];
}
