import { type PolicyOutcome, SluiceError, type StoreReply, type StoreRequest } from '@sluice/core';
import { REPLY_NUMBERS } from './lua/prelude.js';

const BYTES_PER_NUMBER = 8;

/** What the reader needs of each decision in a batch: its policy count and injected clock. */
export interface Asked {
  readonly policyCount: number;
  readonly now: number | undefined;
  /** The request, for a decision whose reply the store learns from (its deny cache); else absent. */
  readonly learnFrom?: StoreRequest | undefined;
}

/**
 * The one place a script reply is read. The reply is one binary string of little-endian
 * doubles (exact for integers below 2^53): the Redis clock's now (0 if the call did not read
 * it), then for each decision asked, in order, three integers per policy: remaining,
 * resetAfterMs and the wait signed by the outcome, delayMs (0 or more) when allowed and
 * -1 - retryAfterMs when refused. One string, because a client parses an array's integers one
 * by one at a cost that grows with every policy. A decision is allowed when all its policies
 * are, and decided at its injected now or else Redis's. Anything but that shape (not whole,
 * beyond 2^53 either way, a remaining or reset below 0, too few or too many numbers, no clock
 * where one was needed) means the script and this code disagree, so it is refused rather than
 * guessed at.
 */
export function parseReplies(raw: unknown, asked: readonly Asked[]): StoreReply[] {
  let length = 1;
  for (const a of asked) length += REPLY_NUMBERS * a.policyCount;
  if (!Buffer.isBuffer(raw) || raw.length !== length * BYTES_PER_NUMBER) throw badReply(raw);
  const numbers = readable(raw);
  const numberAt = (offset: number): number => wholeAt(numbers, offset, raw);
  const redisNow = numberAt(0);
  // Sized up front: a first push grows an empty array to room for 17.
  const replies = new Array<StoreReply>(asked.length);
  let at = BYTES_PER_NUMBER;
  for (let d = 0; d < asked.length; d++) {
    const a = asked[d] as Asked;
    const outcomes = new Array<PolicyOutcome>(a.policyCount);
    let allowed = true;
    for (let i = 0; i < a.policyCount; i++, at += REPLY_NUMBERS * BYTES_PER_NUMBER) {
      const wait = waitAt(numbers, at + 2 * BYTES_PER_NUMBER, raw);
      const passed = wait >= 0;
      allowed &&= passed;
      outcomes[i] = {
        allowed: passed,
        remaining: numberAt(at),
        resetAfterMs: numberAt(at + BYTES_PER_NUMBER),
        retryAfterMs: passed ? 0 : -1 - wait,
        delayMs: passed ? wait : 0,
      };
    }
    if (a.now === undefined && redisNow === 0) throw badReply(raw);
    replies[d] = { allowed, now: a.now ?? redisNow, outcomes };
  }
  return replies;
}

/**
 * Where a reply's numbers are read: its bytes copied in, each number then read in place. A
 * Buffer's `readDoubleLE` puts each number together byte by byte, some 20 ns a number (10
 * numbers for a three-policy decision); the copy of a whole reply costs about one of them.
 * Grown for a reply longer than any before; replies are read synchronously.
 */
const scratch = scratchOf(1024);

function scratchOf(size: number): { bytes: Uint8Array; view: DataView } {
  const buffer = new ArrayBuffer(size);
  return { bytes: new Uint8Array(buffer), view: new DataView(buffer) };
}

/** The reply's bytes in `scratch`, read through its view. */
function readable(raw: Buffer): DataView {
  if (scratch.bytes.length < raw.length) Object.assign(scratch, scratchOf(2 * raw.length));
  scratch.bytes.set(raw);
  return scratch.view;
}

/**
 * The whole number at `offset` of a packed reply, as a small integer where it fits. A double read
 * from a buffer is a heap number even when small and whole, and one such value in an outcome
 * turns that field boxed in every outcome and decision after (an allocation each, slower
 * headers); `Math.trunc` of a whole number hands it on as a small integer.
 */
function wholeAt(numbers: DataView, offset: number, raw: Buffer): number {
  const value = numbers.getFloat64(offset, true);
  if (!Number.isSafeInteger(value) || value < 0) throw badReply(raw);
  return Math.trunc(value);
}

/**
 * A policy's wait at `offset`, signed by its outcome, as `wholeAt` reads a number, but not held
 * below 2^53: a bucket's wait for a cost far above its capacity passes it (2^49 units of a 1 s
 * window, say), as the memory store's does. Such a cost can never pass, and the limiter says so.
 */
function waitAt(numbers: DataView, offset: number, raw: Buffer): number {
  const value = numbers.getFloat64(offset, true);
  if (!Number.isInteger(value)) throw badReply(raw);
  return Math.trunc(value);
}

function badReply(raw: unknown): SluiceError {
  const shown = Buffer.isBuffer(raw) ? numbersIn(raw) : (JSON.stringify(raw) ?? String(raw));
  return new SluiceError(
    'ERR_SLUICE_BAD_STORE_REPLY',
    `[sluice] Redis store: unexpected script reply ${shown.length > 200 ? `${shown.slice(0, 200)}…` : shown}.`,
  );
}

/** A packed reply as the numbers it holds, or its length when it holds no whole number of them. */
function numbersIn(raw: Buffer): string {
  return raw.length % BYTES_PER_NUMBER === 0 ? `[${numbersOf(raw).join(',')}]` : `of ${raw.length} bytes`;
}

/** The doubles of a packed reply whose length is a whole number of them. */
function numbersOf(raw: Buffer): number[] {
  const numbers = new Array<number>(raw.length / BYTES_PER_NUMBER);
  for (let i = 0; i < numbers.length; i++) numbers[i] = raw.readDoubleLE(i * BYTES_PER_NUMBER);
  return numbers;
}
