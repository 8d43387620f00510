import { type Policy, SluiceError } from '@sluice/core';
import calculateSlot from 'cluster-key-slot';

const namespacePattern = /^[^{}|]+$/;
/** Called through this module's own constant: see `charCodeAt` in core's `store-key.ts`. */
const charCodeAt = String.prototype.charCodeAt;
/** The namespace the last decision's keys were made for, which passed the check. */
let lastNamespace: string | undefined;

/**
 * The keys of one decision: the client's state key `<prefix>{<namespace>|<key>}`, which holds
 * every policy's state in one string, then `<prefix>{<namespace>|<key>}:<policy slot>` for each
 * sliding-window-log policy, whose list is as long as its limit. All share one hash tag, so one
 * slot. Core makes every part safe: a namespace is letters, digits and `._:-`; a client key is
 * kept only when it is at most 128 of `A-Za-z0-9._:/@+=-`, and is otherwise `#` and its SHA-256
 * in base64url; a policy slot is its name (`A-Za-z0-9._-`) or `_` and its position. So no part
 * holds a brace, the namespace ends at the first `|`, the tag ends at the first `}`, and two
 * different (namespace, key) never share a Redis key. This checks the braces and the `|`
 * anyway, since stores can be called directly.
 */
export function decisionKeys(prefix: string, namespace: string, key: string, policies: readonly Policy[]): string[] {
  // A limiter asks with the same namespace every time: checked once until another comes.
  if ((namespace !== lastNamespace && !namespacePattern.test(namespace)) || !braceFree(key)) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_KEY',
      '[sluice] Redis store: a namespace may not hold `{`, `}` or `|`, nor a client key `{` or `}`; pass keys through the limiter, which makes them safe.',
    );
  }
  lastNamespace = namespace;
  const clientKey = `${prefix}{${namespace}|${key}}`;
  const keys = [clientKey];
  for (const policy of policies) {
    if (policy.algorithm === 'sliding-window-log') keys.push(`${clientKey}:${policy.slot}`);
  }
  return keys;
}

/**
 * The Redis Cluster hash slot of a client's keys under a namespace, which all share the hash
 * tag `{<namespace>|<key>}`: for a caller that groups its calls by slot, as a Cluster serves them.
 */
export function clientSlot(namespace: string, key: string): number {
  return calculateSlot(`{${namespace}|${key}}`);
}

/** Whether `key` holds no `{` or `}`: on every decision, a character loop costs a fraction of a RegExp test. */
function braceFree(key: string): boolean {
  for (let i = 0; i < key.length; i++) {
    const c = charCodeAt.call(key, i);
    if (c === 123 || c === 125) return false;
  }
  return true;
}
