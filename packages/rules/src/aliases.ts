import {
  type Alias,
  type Document,
  isAlias,
  isCollection,
  isMap,
  isPair,
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

/**
 * Aliases one value may expand to, counted as the yaml package counts them: a small document
 * whose aliases multiply each other (a "billion laughs") is refused instead of expanded.
 */
const MAX_ALIAS_COUNT = 100;

/**
 * The first alias under `node` that refers to a mapping or list holding it, which as plain data
 * would contain itself (envoyproxy/ratelimit's Go decoder refuses such a value too). A depth-first
 * search that visits each node once, however often aliases repeat it.
 */
function selfReference(reader: Reader, node: unknown, open: Set<Node>, done: Set<Node>): Node | undefined {
  if (isPair(node)) return selfReference(reader, node.key, open, done) ?? selfReference(reader, node.value, open, done);
  const target = resolved(reader, node as Node | null);
  if (!isCollection(target) || done.has(target)) return undefined;
  if (open.has(target)) return node as Node;
  open.add(target);
  for (const item of target.items) {
    const found = selfReference(reader, item, open, done);
    if (found !== undefined) return found;
  }
  open.delete(target);
  done.add(target);
  return undefined;
}

/** A node as plain data (metadata, core's options), aliases and merge keys resolved; `undefined` when refused. */
export function plainOf(reader: Reader, node: Node | null, what: string): unknown {
  const loop = selfReference(reader, node, new Set(), new Set());
  if (loop !== undefined) {
    reader.report(
      loop,
      'ERR_SLUICE_RULES_INVALID_VALUE',
      `${what} cannot be read: this alias refers to a value that contains it.`,
    );
    return undefined;
  }
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
