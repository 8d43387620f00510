import { type PolicyOutcome, SluiceError, type StoreReply } from '@sluice/core';

const FIELDS_PER_POLICY = 5;

const replyLength = (policyCount: number): number => 2 + FIELDS_PER_POLICY * policyCount;

/**
 * The one place a script reply is read: one decision per entry of `policyCounts`, in order.
 * Anything but the documented shape (per decision two integers, then five per policy, all
 * whole and non-negative, flags 0 or 1, the decision the AND of the policies; nothing after
 * the last) means the script and this code disagree, so it is refused rather than guessed at.
 */
export function parseReplies(raw: unknown, policyCounts: readonly number[]): StoreReply[] {
  let length = 0;
  for (const count of policyCounts) length += replyLength(count);
  if (!Array.isArray(raw) || raw.length !== length) throw badReply(raw);
  const replies: StoreReply[] = [];
  let at = 0;
  for (const count of policyCounts) {
    replies.push(parseOne(raw, count, at));
    at += replyLength(count);
  }
  return replies;
}

function parseOne(raw: unknown[], policyCount: number, at: number): StoreReply {
  const end = at + replyLength(policyCount);
  for (let i = at; i < end; i++) {
    const value = raw[i];
    if (!Number.isSafeInteger(value) || (value as number) < 0) throw badReply(raw);
  }
  const values = raw as number[];
  const outcomes: PolicyOutcome[] = [];
  let every = true;
  for (let i = at + 2; i < end; i += FIELDS_PER_POLICY) {
    const allowed = values[i] as number;
    if (allowed > 1) throw badReply(raw);
    every &&= allowed === 1;
    outcomes.push({
      allowed: allowed === 1,
      remaining: values[i + 1] as number,
      resetAfterMs: values[i + 2] as number,
      retryAfterMs: values[i + 3] as number,
      delayMs: values[i + 4] as number,
    });
  }
  const allowed = values[at] as number;
  if (allowed > 1 || (allowed === 1) !== every) throw badReply(raw);
  return { allowed: allowed === 1, now: values[at + 1] as number, outcomes };
}

function badReply(raw: unknown): SluiceError {
  const shown = JSON.stringify(raw) ?? String(raw);
  return new SluiceError(
    'ERR_SLUICE_BAD_STORE_REPLY',
    `[sluice] Redis store: unexpected script reply ${shown.length > 200 ? `${shown.slice(0, 200)}…` : shown}.`,
  );
}
