import { type PolicyOutcome, SluiceError, type StoreReply } from '@sluice/core';

const FIELDS_PER_POLICY = 5;

/**
 * The one place a script reply is read. Anything but the documented shape (two integers, then
 * five per policy, all whole and non-negative, flags 0 or 1, the decision the AND of the
 * policies) means the script and this code disagree, so it is refused rather than guessed at.
 */
export function parseReply(raw: unknown, policyCount: number): StoreReply {
  if (
    !Array.isArray(raw) ||
    raw.length !== 2 + FIELDS_PER_POLICY * policyCount ||
    !raw.every((v) => Number.isSafeInteger(v) && v >= 0)
  ) {
    throw bad(raw);
  }
  const values = raw as number[];
  const outcomes: PolicyOutcome[] = [];
  for (let at = 2; at < values.length; at += FIELDS_PER_POLICY) {
    const [allowed, remaining, resetAfterMs, retryAfterMs, delayMs] = values.slice(at, at + FIELDS_PER_POLICY) as [
      number,
      number,
      number,
      number,
      number,
    ];
    if (allowed > 1) throw bad(raw);
    outcomes.push({ allowed: allowed === 1, remaining, resetAfterMs, retryAfterMs, delayMs });
  }
  const [allowed, now] = values as [number, number];
  if (allowed > 1 || (allowed === 1) !== outcomes.every((o) => o.allowed)) throw bad(raw);
  return { allowed: allowed === 1, now, outcomes };
}

function bad(raw: unknown): SluiceError {
  const shown = JSON.stringify(raw) ?? String(raw);
  return new SluiceError(
    'ERR_SLUICE_BAD_STORE_REPLY',
    `[sluice] Redis store: unexpected script reply ${shown.length > 200 ? `${shown.slice(0, 200)}…` : shown}.`,
  );
}
