import {
  type Alias,
  type Document,
  isAlias,
  isMap,
  isScalar,
  isSeq,
  type Node,
  type Pair,
  visit,
  type YAMLMap,
} from 'yaml';
import type { Reader } from './reader.js';

// Anchors, aliases and merge keys, resolved where a document is read: a file written for
// envoyproxy/ratelimit may use them all, since its Go YAML decoder resolves them.

/**
 * What each alias of a document stands for: the node anchored last before it, as the yaml
 * package resolves it. Found in one pass per document, since `Alias.resolve` without a
 * context scans the whole document for every alias it is asked about.
 */
const targets = new WeakMap<Document, Map<Alias, Node>>();

function targetsOf(doc: Document): Map<Alias, Node> {
  let found = targets.get(doc);
  if (found === undefined) {
    const anchored = new Map<string, Node>();
    const byAlias = new Map<Alias, Node>();
    visit(doc, {
      Node(_key, node) {
        if (isAlias(node)) {
          const target = anchored.get(node.source);
          if (target !== undefined) byAlias.set(node, target);
        } else if (node.anchor) anchored.set(node.anchor, node);
      },
    });
    found = byAlias;
    targets.set(doc, found);
  }
  return found;
}

/** A node with any alias (`*name`) followed to what it stands for. */
export function resolved(reader: Reader, node: Node | null | undefined): Node | null | undefined {
  return isAlias(node) ? (targetsOf(reader.doc).get(node) ?? null) : node;
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
