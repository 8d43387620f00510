import { isOverLimitMark } from './decision.js';
import { describe, isSluiceError, SluiceError } from './errors.js';
import type { PolicyOutcome, StoreReply, StoreRequest } from './types.js';

/**
 * A reply to `consume` (or each of `consumeAll`'s) from a store that does not check its own
 * (`checksReplies`: a custom store's, the decision service client's), over `policyCount`
 * policies, checked before a decision is made of it: a reply that is not an object, lacks an
 * outcome per policy, carries a figure that is not a whole number of 0 or more (NaN, text, a
 * negative wait, a fraction) or a mark that is none of `overLimit`'s would otherwise escape as a
 * TypeError or pass into the headers, the queue's hold and the decision. It throws
 * `ERR_SLUICE_BAD_STORE_REPLY`, which the store guard settles under the fail policy, as any
 * store failure, as is one that contradicts itself: `allowed` other than all its outcomes say,
 * an allowed outcome with a wait or a refused one without. (`retryAfterMs` may be Infinity: a
 * cost no state could grant.) Replies a
 * store decides at once or in-process (`decideAtOnce`, `consumeSync`) are not checked here.
 */
export function checkedReply(reply: unknown, policyCount: number): StoreReply {
  if (typeof reply !== 'object' || reply === null) badReply(`${describe(reply)} instead of a reply`);
  const { allowed, now, outcomes, overLimit } = reply as Partial<StoreReply>;
  if (typeof allowed !== 'boolean') badReply(`\`allowed\` ${describe(allowed)}, not true or false`);
  if (overLimit !== undefined && !isOverLimitMark(overLimit))
    badReply(`\`overLimit\` ${describe(overLimit)}, not 'soft', 'elastic' or 'shadow'`);
  if (typeof now !== 'number' || !Number.isFinite(now)) badReply(`\`now\` ${describe(now)}, not a time`);
  if (!Array.isArray(outcomes) || outcomes.length !== policyCount)
    badReply(`${Array.isArray(outcomes) ? outcomes.length : 'no'} outcomes for ${policyCount} policies`);
  for (let i = 0; i < policyCount; i++) {
    const outcome = outcomes[i] as Partial<PolicyOutcome> | null;
    if (typeof outcome !== 'object' || outcome === null) badReply(`outcome ${i} ${describe(outcome)}`);
    if (typeof outcome.allowed !== 'boolean') badReply(`outcome ${i}'s \`allowed\` ${describe(outcome.allowed)}`);
    // Each figure by name: a field read through a variable name is a keyed load.
    checkFigure(outcome.remaining, 'remaining', i, false);
    checkFigure(outcome.resetAfterMs, 'resetAfterMs', i, false);
    checkFigure(outcome.retryAfterMs, 'retryAfterMs', i, true);
    checkFigure(outcome.delayMs, 'delayMs', i, false);
    // A reply that contradicts itself was decided one way by a one-policy limiter (which reads
    // the outcome) and the other by a limiter of several (which reads `allowed`), and a refusal
    // told no wait.
    if (outcome.allowed ? outcome.retryAfterMs !== 0 : outcome.retryAfterMs === 0)
      badReply(
        `outcome ${i} ${outcome.allowed ? 'allowed with' : 'refused with no'} \`retryAfterMs\` (${outcome.retryAfterMs})`,
      );
    if (!outcome.allowed && allowed) badReply(`\`allowed\` true over outcome ${i}, which refused`);
  }
  if (!allowed && outcomes.every((outcome: PolicyOutcome) => outcome.allowed))
    badReply('`allowed` false over outcomes that all allowed');
  return reply as StoreReply;
}

/** A reply to `consumeAll`: one decision per request, each checked as `checkedReply` does. */
export function checkedReplies(replies: unknown, requests: readonly StoreRequest[]): StoreReply[] {
  if (!Array.isArray(replies) || replies.length !== requests.length) {
    const got = Array.isArray(replies) ? `${replies.length} replies` : describe(replies);
    badReply(`${got} instead of ${requests.length} replies, one per request`);
  }
  for (let i = 0; i < requests.length; i++) checkedReply(replies[i], (requests[i] as StoreRequest).policies.length);
  return replies as StoreReply[];
}

export const isBadReply = (error: unknown): boolean =>
  isSluiceError(error) && error.code === 'ERR_SLUICE_BAD_STORE_REPLY';

/**
 * A figure of outcome `i`: a whole number of 0 or more, as SPEC's figures are (a fraction would
 * reach the headers, and a `remaining` of 0.5 would have `peek` allow what `consume`
 * refuses); Infinity only where the wait may be `endless`.
 */
function checkFigure(value: unknown, name: string, i: number, endless: boolean): void {
  const whole = Number.isInteger(value) && (value as number) >= 0;
  if (!whole && !(endless && value === Number.POSITIVE_INFINITY))
    badReply(`outcome ${i}'s \`${name}\` ${describe(value)}, not a whole number of 0 or more`);
}

/** A store call's result that is no promise (a store of another shape, or one that forgot `async`). */
export function notAPromise(result: unknown): SluiceError {
  return new SluiceError(
    'ERR_SLUICE_BAD_STORE_REPLY',
    `[sluice] The store answered with ${describe(result)} instead of a promise.`,
  );
}

function badReply(what: string): never {
  throw new SluiceError('ERR_SLUICE_BAD_STORE_REPLY', `[sluice] The store answered a decision with ${what}.`);
}
