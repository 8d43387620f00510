import { type Policy, SluiceError } from '@sluice/core';

const namespacePattern = /^[^{}|]+$/;
const keyPattern = /^[^{}]*$/;

/**
 * `<prefix>{<namespace>|<key>}:<policy id>`: one key per policy, all of one client in one
 * hash slot. Core makes every part safe: a namespace is letters, digits and `._:-`; a client
 * key is kept only when it is at most 128 of `A-Za-z0-9._:/@+=-`, and is otherwise `#` and its
 * SHA-256 in base64url; a policy id is its name (`A-Za-z0-9._-`) and an algorithm code. So
 * no part holds a brace, the namespace ends at the first `|`, the tag ends at the first `}`,
 * and two different (namespace, key, policy) never share a Redis key. This checks the braces
 * and the `|` anyway, since stores can be called directly.
 */
export function stateKeys(prefix: string, namespace: string, key: string, policies: readonly Policy[]): string[] {
  if (!namespacePattern.test(namespace) || !keyPattern.test(key)) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_KEY',
      '[sluice] Redis store: a namespace may not hold `{`, `}` or `|`, nor a client key `{` or `}`; pass keys through the limiter, which makes them safe.',
    );
  }
  const tagged = `${prefix}{${namespace}|${key}}:`;
  return policies.map((policy) => tagged + policy.id);
}
