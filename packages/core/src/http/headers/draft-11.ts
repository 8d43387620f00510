import type { Decision, Policy } from '../../types.js';
import { flattened, sfInteger, sfSeconds, sfString } from '../structured-fields.js';
import { effectiveWindowMs } from './effective-window.js';

/**
 * draft-ietf-httpapi-ratelimit-headers-11 (same wire format as -08 to -10): both fields are
 * RFC 9651 Lists with one named Item per policy, so several limiters on one request append
 * their items. A bucket whose burst differs from its limit says so in a vendor parameter,
 * since `r` may then exceed `q`.
 *
 * `RateLimit-Policy: "10-per-1s";q=10;w=1, "1000-per-1d";q=1000;w=86400`
 */
export function draft11PolicyField(policies: readonly Policy[]): string {
  return policies
    .map((p) => {
      const burst = p.capacity === p.limit ? '' : `;sluice-burst=${sfInteger(p.capacity)}`;
      return `${sfString(p.name)};q=${sfInteger(p.limit)};w=${sfSeconds(p.windowMs)}${burst}`;
    })
    .join(', ');
}

/**
 * `RateLimit: "10-per-1s";r=7;t=1, "1000-per-1d";r=993;t=86400`. `quotedNames` are the
 * policies' names already serialised, in the limiter's order (which is the decision's).
 */
export function draft11RateLimitField(decision: Decision, quotedNames: readonly string[]): string {
  let field = '';
  const { policies } = decision;
  for (let i = 0; i < policies.length; i++) {
    const p = policies[i] as Decision['policies'][number];
    if (i > 0) field += ', ';
    field += `${quotedNames[i]};r=${sfInteger(p.remaining)};t=${sfSeconds(effectiveWindowMs(p))}`;
  }
  return flattened(field);
}
