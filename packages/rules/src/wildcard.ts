/**
 * A descriptor `value` is a wildcard when it ends in `*`, as envoyproxy/ratelimit reads it: it
 * matches every value that starts with the text before that last `*`. A `*` anywhere else is
 * the character itself (`/files/*.tar.gz` is that text, not a pattern), so a file written for
 * envoyproxy/ratelimit means the same here.
 */
export const isWildcard = (value: string): boolean => value.endsWith('*');

/** The test of a wildcard `value` (see `isWildcard`): a prefix check, never a RegExp. */
export function wildcardMatcher(pattern: string): (value: string) => boolean {
  const prefix = pattern.slice(0, -1);
  return (value) => value.startsWith(prefix);
}
