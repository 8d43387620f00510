/**
 * A descriptor `value` with `*` wildcards (anywhere, any number of them), as
 * envoyproxy/ratelimit reads it: each `*` stands for any run of characters, empty included,
 * and the whole value must match. Matched by a scan, never a RegExp: a value is a request's
 * path or header, the client's to choose, and a pattern of several `*`s compiled to `.*`s
 * backtracks (`*a*a*a*b` took 54 s over 1,024 `a`s). The scan takes the text before the first
 * `*` as a prefix and after the last as a suffix, and finds each part between them at its
 * leftmost place after the one before: a part found further on leaves no more room to the
 * parts after it, so the leftmost fit is a match whenever any is. At most one pass of
 * `indexOf` per part.
 */
export function wildcardMatcher(pattern: string): (value: string) => boolean {
  const parts = pattern.split('*');
  if (parts.length === 1) return (value) => value === pattern;
  const prefix = parts[0] as string;
  const suffix = parts[parts.length - 1] as string;
  const middle = parts.slice(1, -1).filter((part) => part !== '');
  const least = prefix.length + suffix.length;
  return (value) => {
    if (value.length < least || !value.startsWith(prefix) || !value.endsWith(suffix)) return false;
    const end = value.length - suffix.length;
    let at = prefix.length;
    for (const part of middle) {
      const found = value.indexOf(part, at);
      if (found === -1 || found + part.length > end) return false;
      at = found + part.length;
    }
    return true;
  };
}
