import { createHash } from 'node:crypto';

/** The longest client key kept as it is. */
const MAX_KEPT_LENGTH = 128;
/** What a hashed key starts with, and its code (`isHashedKey` compares codes). */
const HASHED = '#';
const HASH_MARK = HASHED.charCodeAt(0);

// The last key made safe, and what it became. A store that takes keys as given makes a key it
// does not hold safe to look it up, and the limiter then makes the same key safe again for
// `consume`: the second time costs a comparison, not a loop or a SHA-256.
let lastGiven = '';
let lastSafe = '';

/**
 * Client keys are client-controlled bytes. A short key of safe characters
 * (`A–Z a–z 0–9 . _ : / @ + = -`) is kept as it is; anything else (braces, newlines, long
 * keys) becomes `#` + the SHA-256 of its UTF-16 code units. `#` is not a safe character, so a hashed key can never
 * equal a kept one, and no key can break out of its namespace or a Redis `{hash tag}`.
 */
export function storeKey(key: string): string {
  if (key !== lastGiven) {
    // Hashed as UTF-16 code units: as UTF-8, every lone surrogate would become U+FFFD, and
    // '\ud800', '\udc00' and '\ufffd' would share one counter.
    lastSafe = isSafe(key) ? key : `${HASHED}${createHash('sha256').update(key, 'utf16le').digest('base64url')}`;
    lastGiven = key;
  }
  return lastSafe;
}

/**
 * `String.prototype.charCodeAt`, called through this module's own constant
 * (`charCodeAt.call(text, i)`) by the per-request character loops. A library that subclasses
 * `String` (ioredis 6 does, for RESP3 verbatim strings) leaves `String.prototype` in dictionary
 * mode in V8 (Node 20), and `text.charCodeAt(i)` then looks the method up for every character.
 * Through a constant of the module, the optimising compiler reads the character in place; an
 * imported binding it cannot see through, and it calls the builtin instead (some 3 times the
 * cost per character).
 */
const charCodeAt = String.prototype.charCodeAt;

/** 1 for each safe character code below 128: one load per character, where comparisons took seven. */
const SAFE = new Uint8Array(128);
for (const c of 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:/@+=-') SAFE[c.charCodeAt(0)] = 1;

/** A character loop: this runs on every request and is several times cheaper than a RegExp. */
function isSafe(key: string): boolean {
  if (key.length > MAX_KEPT_LENGTH) return false;
  for (let i = 0; i < key.length; i++) {
    const c = charCodeAt.call(key, i);
    if (c >= 128 || SAFE[c] === 0) return false;
  }
  return true;
}

/** Whether a key `storeKey` returned is a hash (a key kept as given never starts with `#`). */
export function isHashedKey(key: string): boolean {
  // Its first code compared, not `key[0]`, which fetches a one-character string to compare:
  // some 15 instructions a call more.
  return charCodeAt.call(key, 0) === HASH_MARK;
}

/**
 * Whether `key`, once found among keys made safe, is itself safe, so that `storeKey` would
 * return it unchanged: a store that takes keys as given (`RateLimitStore.takesKeysAsGiven`)
 * and holds only safe keys skips `storeKey` for such a key it holds. A hashed key starts with
 * `#`, which a given key may too; one longer than a kept key is never held as it is.
 */
export function safeWhenHeld(key: string): boolean {
  return key.length <= MAX_KEPT_LENGTH && !isHashedKey(key);
}
