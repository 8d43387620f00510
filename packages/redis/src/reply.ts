import { type PolicyOutcome, SluiceError, type StoreReply } from '@sluice/core';

const SPACE = 32;
const ZERO = 48;
const NINE = 57;

/**
 * The one place a script reply is read: one string of whole numbers separated by single
 * spaces, per decision (one per entry of `policyCounts`, in order) the decision and now, then
 * per policy allowed, remaining, resetAfterMs, retryAfterMs and delayMs. Anything but that
 * shape (a sign, a fraction, a number beyond 2^53, a flag not 0 or 1, a decision that is not
 * the AND of its policies, too few or too many numbers) means the script and this code
 * disagree, so it is refused rather than guessed at.
 */
export function parseReplies(raw: unknown, policyCounts: readonly number[]): StoreReply[] {
  if (typeof raw !== 'string') throw badReply(raw);
  const numbers = new WholeNumbers(raw);
  const replies: StoreReply[] = [];
  for (const count of policyCounts) {
    const allowed = numbers.flag();
    const now = numbers.next();
    const outcomes: PolicyOutcome[] = [];
    let every = true;
    for (let i = 0; i < count; i++) {
      const outcome: PolicyOutcome = {
        allowed: numbers.flag(),
        remaining: numbers.next(),
        resetAfterMs: numbers.next(),
        retryAfterMs: numbers.next(),
        delayMs: numbers.next(),
      };
      every &&= outcome.allowed;
      outcomes.push(outcome);
    }
    if (allowed !== every) throw badReply(raw);
    replies.push({ allowed, now, outcomes });
  }
  numbers.end();
  return replies;
}

/** Reads the numbers of a reply one by one, without splitting it into strings first. */
class WholeNumbers {
  private at = 0;

  constructor(private readonly text: string) {}

  next(): number {
    const { text } = this;
    if (this.at > 0) {
      if (text.charCodeAt(this.at) !== SPACE) throw badReply(text);
      this.at++;
    }
    const start = this.at;
    let value = 0;
    for (let code = text.charCodeAt(this.at); code >= ZERO && code <= NINE; code = text.charCodeAt(++this.at)) {
      value = value * 10 + (code - ZERO);
    }
    if (this.at === start || !Number.isSafeInteger(value)) throw badReply(text);
    return value;
  }

  flag(): boolean {
    const value = this.next();
    if (value > 1) throw badReply(this.text);
    return value === 1;
  }

  end(): void {
    if (this.at !== this.text.length) throw badReply(this.text);
  }
}

function badReply(raw: unknown): SluiceError {
  const shown = JSON.stringify(raw) ?? String(raw);
  return new SluiceError(
    'ERR_SLUICE_BAD_STORE_REPLY',
    `[sluice] Redis store: unexpected script reply ${shown.length > 200 ? `${shown.slice(0, 200)}…` : shown}.`,
  );
}
