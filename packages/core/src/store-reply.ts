import { describe, isSluiceError, SluiceError } from './errors.js';
import type { PolicyOutcome, StoreReply } from './types.js';

/**
 * A remote or custom store's reply to a decision over `policyCount` policies, checked before a
 * decision is made of it: a reply that is not an object, lacks an outcome per policy, or
 * carries a figure that is not a number of 0 or more (NaN, text, a negative wait) would
 * otherwise escape as a TypeError or pass into the headers and the queue's hold. It throws
 * `ERR_SLUICE_BAD_STORE_REPLY`, which the store guard settles under the fail policy, as any
 * store failure. (`retryAfterMs` may be Infinity: a cost no state could grant.)
 */
export function checkedReply(reply: unknown, policyCount: number): StoreReply {
  if (typeof reply !== 'object' || reply === null) badReply(`${describe(reply)} instead of a reply`);
  const { allowed, now, outcomes } = reply as Partial<StoreReply>;
  if (typeof allowed !== 'boolean') badReply(`\`allowed\` ${describe(allowed)}, not true or false`);
  if (typeof now !== 'number' || !Number.isFinite(now)) badReply(`\`now\` ${describe(now)}, not a time`);
  if (!Array.isArray(outcomes) || outcomes.length !== policyCount)
    badReply(`${Array.isArray(outcomes) ? outcomes.length : 'no'} outcomes for ${policyCount} policies`);
  for (let i = 0; i < policyCount; i++) {
    const outcome = outcomes[i] as Partial<PolicyOutcome> | null;
    if (typeof outcome !== 'object' || outcome === null) badReply(`outcome ${i} ${describe(outcome)}`);
    if (typeof outcome.allowed !== 'boolean') badReply(`outcome ${i}'s \`allowed\` ${describe(outcome.allowed)}`);
    for (const figure of ['remaining', 'resetAfterMs', 'retryAfterMs', 'delayMs'] as const) {
      const value = outcome[figure];
      if (
        typeof value !== 'number' ||
        !(value >= 0) ||
        (value === Number.POSITIVE_INFINITY && figure !== 'retryAfterMs')
      )
        badReply(`outcome ${i}'s \`${figure}\` ${describe(value)}, not a number of 0 or more`);
    }
  }
  return reply as StoreReply;
}

export const isBadReply = (error: unknown): boolean =>
  isSluiceError(error) && error.code === 'ERR_SLUICE_BAD_STORE_REPLY';

function badReply(what: string): never {
  throw new SluiceError('ERR_SLUICE_BAD_STORE_REPLY', `[sluice] The store answered a decision with ${what}.`);
}
