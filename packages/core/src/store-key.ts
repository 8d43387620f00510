import { createHash } from 'node:crypto';

const safe = /^[A-Za-z0-9._:/@+=-]{0,128}$/;

/**
 * Client keys are client-controlled bytes. A short key of safe characters is kept as it is;
 * anything else (braces, newlines, long keys) becomes `#` + its SHA-256. `#` is not a safe
 * character, so a hashed key can never equal a kept one, and no key can break out of its
 * namespace or a Redis `{hash tag}`.
 */
export function storeKey(key: string): string {
  return safe.test(key) ? key : `#${createHash('sha256').update(key).digest('base64url')}`;
}
