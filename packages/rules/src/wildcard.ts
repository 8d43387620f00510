/**
 * A descriptor `value` with `*` wildcards (anywhere, any number of them), as
 * envoyproxy/ratelimit reads it: each `*` stands for any run of characters, empty included,
 * and the whole value must match. Compiled once per load, so matching costs one RegExp test.
 */
export function wildcardMatcher(pattern: string): (value: string) => boolean {
  const parts = pattern.split('*');
  if (parts.length === 2 && parts[1] === '') {
    const prefix = parts[0] as string;
    return (value) => value.startsWith(prefix);
  }
  const source = parts.map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*');
  const regexp = new RegExp(`^${source}$`, 's');
  return (value) => regexp.test(value);
}
