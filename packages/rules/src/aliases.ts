import { isAlias, isMap, isScalar, isSeq, type Node, type Pair, type YAMLMap } from 'yaml';
import type { Reader } from './reader.js';

// Anchors, aliases and merge keys, resolved where a document is read: a file written for
// envoyproxy/ratelimit may use them all, since its Go YAML decoder resolves them.

/** A node with any alias (`*name`) followed to what it stands for. */
export function resolved(reader: Reader, node: Node | null | undefined): Node | null | undefined {
  return isAlias(node) ? (node.resolve(reader.doc) ?? null) : node;
}

/**
 * Aliases one value may expand to, counted as the yaml package counts them: a small document
 * whose aliases multiply each other (a "billion laughs") is refused instead of expanded.
 */
const MAX_ALIAS_COUNT = 100;

/** A node as plain data (metadata, core's options), aliases and merge keys resolved; `undefined` when refused. */
export function plainOf(reader: Reader, node: Node | null, what: string): unknown {
  try {
    return node?.toJS(reader.doc, { maxAliasCount: MAX_ALIAS_COUNT });
  } catch (error) {
    reader.report(node, 'ERR_SLUICE_RULES_INVALID_VALUE', `${what} cannot be read: ${(error as Error).message}.`);
    return undefined;
  }
}

const isMergeKey = (key: unknown): boolean =>
  isScalar(key) && typeof key.value === 'symbol' && key.value.description === '<<';

/**
 * A mapping's own pairs, then those its merge keys (`<<: *base`, `<<: [*a, *b]`) bring in, in
 * the order where the first of a key wins: the YAML merge-key rule. envoyproxy/ratelimit's Go
 * decoder (yaml.v2) agrees whenever `<<` comes before the keys it sits with, as it usually
 * does; it applies a merge where it stands instead. Each mapping is expanded once, so merges
 * of merges stay bounded.
 */
export function pairsOf(reader: Reader, map: YAMLMap, seen = new Set<YAMLMap>()): Pair[] {
  seen.add(map);
  const own: Pair[] = [];
  const merged: Pair[] = [];
  for (const pair of map.items) {
    if (!isMergeKey(pair.key)) {
      own.push(pair);
      continue;
    }
    const value = resolved(reader, pair.value as Node | null);
    for (const source of isSeq(value) ? value.items : [value]) {
      const from = resolved(reader, source as Node | null);
      if (!isMap(from))
        reader.report(
          (source as Node | null) ?? (pair.key as Node),
          'ERR_SLUICE_RULES_INVALID_VALUE',
          'A merge key `<<` takes a mapping or a list of mappings.',
        );
      else if (!seen.has(from)) merged.push(...pairsOf(reader, from, seen));
    }
  }
  return [...own, ...merged];
}
