import { type Alias, type Document, isAlias, isMap, isScalar, isSeq, type Node, Pair, visit, YAMLMap } from 'yaml';
import { MAX_NESTING } from './nesting.js';
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

/** A mapping's pairs with its merges expanded, and how many mappings its longest chain of merges holds (itself included). */
interface Expansion {
  readonly pairs: Pair[];
  readonly depth: number;
}

/** Each mapping's expansion: every mapping a chain of merges reaches is expanded once. */
const expansions = new WeakMap<YAMLMap, Expansion>();

/**
 * A mapping's pairs with its merge keys (`<<: *base`, `<<: [*a, *b]`) expanded as
 * envoyproxy/ratelimit's Go decoder (yaml.v2) expands them: in document order, each key
 * written or merged in replaces the same key before it, so `{ a: 1, <<: *b }` takes `b`'s `a`
 * and `{ <<: *b, a: 1 }` keeps 1 (a mapping over a mapping replaces key by key: see
 * `overlaid`); of a list of merges the first wins. (The YAML merge-key rule
 * lets a key written beside `<<` win wherever it stands: the two agree when `<<` comes first, as
 * it usually does, and a file written for envoyproxy/ratelimit means the same here either way.)
 * Each mapping is expanded once and holds each key once, so a chain of merges of merges costs
 * its length: it cost its cube when each mapping expanded the chain anew (2,000 links, 34 s).
 */
export function pairsOf(reader: Reader, map: YAMLMap): Pair[] {
  return expand(reader, map, new Set()).pairs;
}

/**
 * `pairsOf`, with the mappings being expanded (`open`): a merge back into one of them is
 * skipped. A chain of merges longer than `MAX_NESTING` mappings is refused, as text nested that
 * deep is: aliases let a chain run deeper than any text nests, each link is a call, and some
 * 3,000 overflowed the stack. It is refused however the chain is first reached, from its end
 * (deep calls) or link by link (each expanded already).
 */
function expand(reader: Reader, map: YAMLMap, open: Set<YAMLMap>): Expansion & { whole: boolean } {
  const known = expansions.get(map);
  if (known !== undefined) return { ...known, whole: true };
  open.add(map);
  const pairs: Pair[] = [];
  const placeOf = new Map<string, number>();
  const put = (pair: Pair): void => {
    const { key } = pair;
    const name = isScalar(key) && typeof key.value === 'string' ? key.value : undefined;
    const place = name === undefined ? undefined : placeOf.get(name);
    if (place !== undefined) pairs[place] = overlaysMade.has(map) ? pair : overlaid(reader, pairs[place] as Pair, pair);
    else {
      if (name !== undefined) placeOf.set(name, pairs.length);
      pairs.push(pair);
    }
  };
  const tooLong = (from: YAMLMap): void =>
    reader.report(from, 'ERR_SLUICE_RULES_INVALID_VALUE', `Merge keys chain more than ${MAX_NESTING} mappings.`);
  // Whole unless a merge led back into a mapping still open (what it holds then depends on
  // where the expansion started, and is not kept) or past the longest chain.
  let whole = true;
  let depth = 1;
  const merge = (from: YAMLMap): void => {
    if (open.has(from)) {
      whole = false;
      return;
    }
    if (open.size === MAX_NESTING) {
      tooLong(from);
      whole = false;
      return;
    }
    const merged = expand(reader, from, open);
    if (merged.depth === MAX_NESTING) {
      tooLong(from);
      whole = false;
      return;
    }
    whole &&= merged.whole;
    depth = Math.max(depth, merged.depth + 1);
    for (const pair of merged.pairs) put(pair);
  };
  for (const pair of map.items) {
    if (!isMergeKey(pair.key)) {
      put(pair);
      continue;
    }
    const value = resolved(reader, pair.value as Node | null);
    const sources: YAMLMap[] = [];
    for (const source of isSeq(value) ? value.items : [value]) {
      const from = resolved(reader, source as Node | null);
      if (isMap(from)) sources.push(from);
      else
        reader.report(
          (source as Node | null) ?? (pair.key as Node),
          'ERR_SLUICE_RULES_INVALID_VALUE',
          'A merge key `<<` takes a mapping or a list of mappings.',
        );
    }
    // The first of a list wins: merged last.
    for (const from of sources.reverse()) merge(from);
  }
  open.delete(map);
  if (whole) expansions.set(map, { pairs, depth });
  return { pairs, depth, whole };
}

/**
 * `later` in place of `earlier`, a pair of the same key: where both hold mappings, one mapping
 * of `earlier`'s keys with `later`'s over them, key by key. The Go decoder reads `rate_limit`
 * into the struct it already has, so `{ <<: *base, rate_limit: { requests_per_unit: 20 } }`
 * keeps the base's `unit`. It goes one level down, as the decoder does into a struct of
 * scalars (`rate_limit`) or a map of values (`metadata`), whose own mappings it replaces: an
 * overlay's keys replace each other. Overlays of overlays, level after level, grew
 * exponentially with a file's merges (14 s for 16 KB). The mapping made is placed where
 * `later`'s is written, for messages.
 */
function overlaid(reader: Reader, earlier: Pair, later: Pair): Pair {
  const under = resolved(reader, earlier.value as Node | null);
  const over = resolved(reader, later.value as Node | null);
  if (!isMap(under) || !isMap(over) || under === over) return later;
  return new Pair(later.key, overlay(reader, under, over));
}

/**
 * Each pair of mappings laid one over the other, made once: aliases let one pair meet itself
 * many times (a merge of 21 copies of a mapping whose values double 30 times over took 16 s
 * when each meeting made the overlay anew), and a mapping made once is expanded once.
 */
const overlays = new WeakMap<YAMLMap, WeakMap<YAMLMap, YAMLMap>>();
const overlaysMade = new WeakSet<YAMLMap>();

function overlay(reader: Reader, under: YAMLMap, over: YAMLMap): YAMLMap {
  let byOver = overlays.get(under);
  if (byOver === undefined) {
    byOver = new WeakMap();
    overlays.set(under, byOver);
  }
  let both = byOver.get(over);
  if (both === undefined) {
    both = new YAMLMap();
    both.items = [...pairsOf(reader, under), ...pairsOf(reader, over)];
    both.range = over.range ?? null;
    overlaysMade.add(both);
    byOver.set(over, both);
  }
  return both;
}
