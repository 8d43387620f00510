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
import { nodeCountOf } from './descriptor-walk.js';
import { MAX_NESTING } from './nesting.js';
import type { Reader } from './reader.js';

// Anchors, aliases and merge keys, resolved where a document is read: a file written for
// envoyproxy/ratelimit may use them all, since its Go YAML decoder resolves them.

/**
 * What each alias of a document stands for: the node anchored last before it, as the yaml
 * package resolves it; and the aliases that stand for nothing, naming no anchor before them.
 * Found in one pass per document, since `Alias.resolve` without a context scans the whole
 * document for every alias it is asked about.
 */
interface Targets {
  readonly byAlias: Map<Alias, Node>;
  readonly dangling: Alias[];
}

const targets = new WeakMap<Document, Targets>();

function targetsOf(doc: Document): Targets {
  let found = targets.get(doc);
  if (found === undefined) {
    const anchored = new Map<string, Node>();
    found = { byAlias: new Map(), dangling: [] };
    const { byAlias, dangling } = found;
    visit(doc, {
      Node(_key, node) {
        if (isAlias(node)) {
          const target = anchored.get(node.source);
          if (target === undefined) dangling.push(node);
          else byAlias.set(node, target);
        } else if (node.anchor) anchored.set(node.anchor, node);
      },
    });
    targets.set(doc, found);
  }
  return found;
}

/**
 * Reports each alias that names no anchor before it (`*defualt` for `*default`), true when
 * there is one. envoyproxy/ratelimit's decoder refuses such a file ("unknown anchor"); read as
 * no value, the alias would drop a rule's limit, or widen a rule to every value of its key.
 */
export function reportDanglingAliases(reader: Reader): boolean {
  const { dangling } = targetsOf(reader.doc);
  for (const alias of dangling)
    reader.report(
      alias,
      'ERR_SLUICE_RULES_SYNTAX',
      `The alias \`*${alias.source}\` names no anchor (\`&${alias.source}\`) before it.`,
    );
  return dangling.length > 0;
}

/** A node with any alias (`*name`) followed to what it stands for. */
export function resolved(reader: Reader, node: Node | null | undefined): Node | null | undefined {
  return isAlias(node) ? (targetsOf(reader.doc).byAlias.get(node) ?? null) : node;
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
 * and `{ <<: *b, a: 1 }` keeps 1; of a list of merges the first wins. Where a mapping meets a
 * mapping under one key (`{ <<: *base, rate_limit: { requests_per_unit: 20 } }`), the Go
 * decoder fills the struct the first gave `rate_limit` key by key, keeping the keys the second
 * leaves out; here the second replaces the first whole, so a second that leaves out any is
 * refused (`ERR_SLUICE_RULES_CONFLICT`, where this mapping writes or merges it), never read
 * another way: docs/rules.md lists the difference. The YAML merge-key rule, which lets a key
 * written beside `<<` win wherever it stands, agrees when `<<` comes first, as it usually does.
 * Each mapping is expanded once and holds each key once, so a chain of merges of merges costs
 * its length: it cost its cube when each mapping expanded the chain anew (2,000 links, 34 s).
 */
export function pairsOf(reader: Reader, map: YAMLMap): Pair[] {
  return expand(reader, map, new Set()).pairs;
}

/**
 * `pairsOf`, with the mappings being expanded (`open`): a merge back into one of them is
 * refused. A chain of merges longer than `MAX_NESTING` mappings is refused, as text nested that
 * deep is: aliases let a chain run deeper than any text nests, each link is a call, and some
 * 3,000 overflowed the stack. It is refused however the chain is first reached, from its end
 * (deep calls) or link by link (each expanded already).
 */
function expand(reader: Reader, map: YAMLMap, open: Set<YAMLMap>): Expansion {
  const known = expansions.get(map);
  if (known !== undefined) return known;
  open.add(map);
  let pairs: Pair[] = [];
  const placeOf = new Map<string, number>();
  // `at`: where in this mapping the pair comes from, its key or the merge that brought it.
  const put = (pair: Pair, at: Node): void => {
    const { key } = pair;
    const name = isScalar(key) && typeof key.value === 'string' ? key.value : undefined;
    const place = name === undefined ? undefined : placeOf.get(name);
    if (place !== undefined) {
      const lost = keptByGo(reader, pairs[place] as Pair, pair, open);
      if (lost.length > 0)
        reader.report(
          at,
          'ERR_SLUICE_RULES_CONFLICT',
          `\`${name}\` is given twice here, through a merge, and the second leaves out ${lost.map((k) => `\`${k}\``).join(', ')}${lost.length === MAX_NAMED ? ' and maybe more' : ''}: envoyproxy/ratelimit's decoder keeps the first's, where sluice would drop them; give them in the second too, or give \`${name}\` once.`,
        );
      pairs[place] = pair;
    } else {
      if (name !== undefined) placeOf.set(name, pairs.length);
      pairs.push(pair);
    }
  };
  const tooLong = (from: YAMLMap): void =>
    reader.report(from, 'ERR_SLUICE_RULES_INVALID_VALUE', `Merge keys chain more than ${MAX_NESTING} mappings.`);
  // Kept even where a merge was refused (a merge back into a mapping still open, or past the
  // longest chain), whose problem is reported: expanded anew from each mapping that merges it,
  // a refused chain cost 2^n for n levels that each merge the one below twice.
  let depth = 1;
  // Whether the mapping holds nothing but one merge of one mapping (see `merge`).
  const only = map.items.length === 1 ? (map.items[0] as Pair) : undefined;
  const alone = only !== undefined && isMergeKey(only.key) && !isSeq(only.value);
  const merge = ({ from, at }: { from: YAMLMap; at: Node }): void => {
    // Plain data would contain itself, and the Go decoder refuses it ("anchor … value contains
    // itself"), so it is refused too, not skipped.
    if (open.has(from)) {
      reader.report(at, 'ERR_SLUICE_RULES_INVALID_VALUE', 'A merge key `<<` refers to a mapping that contains it.');
      return;
    }
    if (open.size === MAX_NESTING) {
      tooLong(from);
      return;
    }
    const merged = expand(reader, from, open);
    if (merged.depth === MAX_NESTING) {
      tooLong(from);
      return;
    }
    depth = Math.max(depth, merged.depth + 1);
    // A mapping that holds nothing but this merge (`{ <<: *base }`) shares the merged one's
    // pairs, and so its set of keys (`keysOf`), rather than copying them: a file of many such
    // one-line mappings costs their number, not their number times the base's keys.
    if (alone) pairs = merged.pairs;
    else for (const pair of merged.pairs) put(pair, at);
  };
  for (const pair of map.items) {
    if (!isMergeKey(pair.key)) {
      put(pair, pair.key as Node);
      continue;
    }
    // A list written there, not an alias to one, which the Go decoder refuses.
    const value = pair.value as Node | null;
    const sources: { from: YAMLMap; at: Node }[] = [];
    for (const source of isSeq(value) ? value.items : [value]) {
      const from = resolved(reader, source as Node | null);
      if (isMap(from)) sources.push({ from, at: source as Node });
      else
        reader.report(
          (source as Node | null) ?? (pair.key as Node),
          'ERR_SLUICE_RULES_INVALID_VALUE',
          'A merge key `<<` takes a mapping, an alias to one, or a list of them written in place.',
        );
    }
    // The first of a list wins: merged last.
    for (const source of sources.reverse()) merge(source);
  }
  open.delete(map);
  const expansion = { pairs, depth };
  expansions.set(map, expansion);
  return expansion;
}

/**
 * The keys of `earlier`'s mapping that `later`'s leaves out, at most `MAX_NAMED` of them, where
 * both hold mappings: the Go decoder fills the first from the second key by key, so it keeps
 * these, where a mapping here replaces the other whole. None where the second gives every key
 * the first does, and the two readings agree. Expanded within `open`, so a merge back into a
 * mapping being expanded is refused there, not followed for ever. Found once per pair of
 * mappings, at once for two that share one expansion, and within the document's budget of
 * keys compared, so merges that meet again and again stay linear.
 */
function keptByGo(reader: Reader, earlier: Pair, later: Pair, open: Set<YAMLMap>): string[] {
  const under = resolved(reader, earlier.value as Node | null);
  const over = resolved(reader, later.value as Node | null);
  if (!isMap(under) || !isMap(over) || under === over || open.has(under) || open.has(over)) return [];
  let byOver = lostKeys.get(under);
  if (byOver === undefined) {
    byOver = new WeakMap();
    lostKeys.set(under, byOver);
  }
  let lost = byOver.get(over);
  if (lost === undefined) {
    lost = [];
    const [first, second] = [keysOf(reader, under, open), keysOf(reader, over, open)];
    // Mappings that only merge one other share its keys: nothing is left out, found at once.
    if (first !== second) {
      const comparing = comparingOf(reader);
      for (const key of first) {
        if (lost.length === MAX_NAMED) break;
        if (++comparing.spent > comparing.budget) {
          if (comparing.spent === comparing.budget + 1)
            reader.report(
              later.key as Node,
              'ERR_SLUICE_RULES_INVALID_VALUE',
              `Merge keys make mappings meet over more than ${comparing.budget} keys in all, counting each alias as a copy of what it stands for: aliases that multiply each other are refused, not compared.`,
            );
          break;
        }
        if (!second.has(key)) lost.push(key);
      }
    }
    byOver.set(over, lost);
  }
  return lost;
}

/** The most keys a message names. */
const MAX_NAMED = 5;
/** The fewest keys a document's meeting mappings may be compared over; one per YAML node past it. */
const MIN_COMPARED_KEYS = 1_000_000;
const lostKeys = new WeakMap<YAMLMap, WeakMap<YAMLMap, string[]>>();
const keySets = new WeakMap<Pair[], Set<string>>();
const comparings = new WeakMap<Reader, { spent: number; readonly budget: number }>();

function comparingOf(reader: Reader): { spent: number; readonly budget: number } {
  let comparing = comparings.get(reader);
  if (comparing === undefined) {
    comparing = { spent: 0, budget: Math.max(MIN_COMPARED_KEYS, nodeCountOf(reader.doc)) };
    comparings.set(reader, comparing);
  }
  return comparing;
}

/**
 * A mapping's keys, merges expanded, found once per expansion: mappings that only merge one
 * other share its expansion (see `expand`'s `alone`), and so its set of keys.
 */
function keysOf(reader: Reader, map: YAMLMap, open: Set<YAMLMap>): Set<string> {
  const { pairs } = expand(reader, map, open);
  let keys = keySets.get(pairs);
  if (keys === undefined) {
    keys = new Set();
    for (const { key } of pairs) if (isScalar(key) && typeof key.value === 'string') keys.add(key.value);
    keySets.set(pairs, keys);
  }
  return keys;
}
