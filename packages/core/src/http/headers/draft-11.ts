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
 * Each policy's item of the `RateLimit` field up to its figures (`"10-per-1s";r=`), in the
 * limiter's order, made flat once. V8 keeps a string of 13 characters or more joined by `+` as
 * a rope of its pieces, and `flattened` copies each field by walking every piece: a quoted
 * name that long is itself a rope, which every field walked anew (4,243 instructions a
 * decision on the memory store's pass path, 3,988 with the heads flat, by
 * `http-layer-instructions.ts`).
 */
export function draft11ItemHeads(policies: readonly Policy[]): string[] {
  return policies.map((p) => flattened(`${sfString(p.name)};r=`));
}

/**
 * `RateLimit: "10-per-1s";r=7;t=1, "1000-per-1d";r=993;t=86400`. `itemHeads` are the
 * limiter's `draft11ItemHeads`, in its order (which is the decision's).
 */
export function draft11RateLimitField(decision: Decision, itemHeads: readonly string[]): string {
  let field = '';
  const { policies } = decision;
  for (let i = 0; i < policies.length; i++) {
    const p = policies[i] as Decision['policies'][number];
    if (i > 0) field += ', ';
    field += `${itemHeads[i]}${sfInteger(p.remaining)};t=${sfSeconds(effectiveWindowMs(p))}`;
  }
  return flattened(field);
}
