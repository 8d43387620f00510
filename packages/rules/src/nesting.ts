import type { CST } from 'yaml';

/**
 * The deepest a rules document may nest collections. A rule tree a person writes nests a few
 * levels of descriptors, two collections each; past some 900 the yaml package's composer, which
 * recurses, overflowed the stack, and a second such document read in the same process then
 * aborted it (V8 ran out of memory compiling a regular expression), past any catch.
 */
export const MAX_NESTING = 128;

/**
 * Where the first collection nested deeper than {@link MAX_NESTING} starts, or `undefined`.
 * Walked with a stack of its own over the parser's tokens, which the parser builds without
 * recursing, so any depth can be measured before anything recurses into it.
 */
export function tooDeepAt(tokens: readonly CST.Token[]): number | undefined {
  const pending: [CST.Token | undefined, number][] = tokens.map((token) => [token, 0]);
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const [token, depth] = next;
    if (token === undefined) continue;
    if (token.type === 'document') {
      pending.push([token.value, depth]);
    } else if (token.type === 'block-map' || token.type === 'block-seq' || token.type === 'flow-collection') {
      if (depth === MAX_NESTING) return token.offset;
      for (const item of token.items) {
        if ('key' in item) pending.push([item.key ?? undefined, depth + 1]);
        pending.push([item.value, depth + 1]);
      }
    }
  }
  return undefined;
}
