import { isCollection, isPair, isScalar, type Node, YAMLMap, YAMLSeq } from 'yaml';
import { resolved } from './aliases.js';
import { nodeCountOf } from './descriptor-walk.js';
import type { Reader } from './reader.js';

// `metadata`, `policies` and `throttle` are read as plain data (core takes its options so). A
// value reached through aliases is read once per document, however many descriptors share it,
// and every value read counts against the document's budget: aliases cannot make a small file
// expand to gigabytes or stall a watcher for minutes.

/**
 * The fewest values (scalars, lists and mappings, each alias counting as a copy of what it
 * stands for) a document's plain data may hold; a document with more YAML nodes may hold one
 * per node.
 */
export const MIN_PLAIN_VALUE_BUDGET = 100_000;

/**
 * Aliases one value may expand to, counted as the yaml package counts them: a small document
 * whose aliases multiply each other (a "billion laughs") is refused instead of expanded.
 */
const MAX_ALIAS_COUNT = 100;

interface PlainReading {
  /** Each node's size in values, aliases followed: found once per node. */
  readonly sizes: Map<Node, number>;
  /** Each node's value, once read; `undefined` where it was refused. */
  readonly values: Map<Node, unknown>;
  spent: number;
  readonly budget: number;
}

const readings = new WeakMap<Reader, PlainReading>();

function readingOf(reader: Reader): PlainReading {
  let reading = readings.get(reader);
  if (reading === undefined) {
    const budget = Math.max(MIN_PLAIN_VALUE_BUDGET, nodeCountOf(reader.doc));
    reading = { sizes: new Map(), values: new Map(), spent: 0, budget };
    readings.set(reader, reading);
  }
  return reading;
}

/** Why a value cannot be read as plain data, and where. */
interface Refusal {
  readonly at: Node;
  readonly why: string;
}

const tagOf = (node: Node): string => node.tag?.replace('tag:yaml.org,2002:', '!!') ?? 'tagged';

const refusal = (node: Node): Refusal => ({
  at: node,
  why: `a \`${tagOf(node)}\` value is not plain data; use strings, numbers, booleans, null, lists and mappings`,
});

/**
 * How many values `node` holds once its aliases are followed, or why it cannot be read: an
 * alias to a value that contains it (plain data would contain itself; envoyproxy/ratelimit's Go
 * decoder refuses it too), or a value JSON cannot hold (`!!binary`, `!!set`, `!!omap`,
 * `!!timestamp`), which a rule could neither freeze nor publish as written. A depth-first walk
 * that sizes each node once, however often aliases repeat it.
 */
function sizeOf(reader: Reader, node: unknown, open: Set<Node>, sizes: Map<Node, number>): number | Refusal {
  if (isPair(node)) {
    const key = sizeOf(reader, node.key, open, sizes);
    if (typeof key !== 'number') return key;
    const value = sizeOf(reader, node.value, open, sizes);
    return typeof value === 'number' ? key + value : value;
  }
  const target = resolved(reader, node as Node | null);
  if (target === null || target === undefined) return 1;
  const known = sizes.get(target);
  if (known !== undefined) return known;
  if (open.has(target)) return { at: node as Node, why: 'this alias refers to a value that contains it' };
  let size = 1;
  if (isScalar(target)) {
    if (typeof target.value === 'object' && target.value !== null) return refusal(target);
  } else if (!isCollection(target) || (target.constructor !== YAMLMap && target.constructor !== YAMLSeq)) {
    // A `!!set` is a mapping and an `!!omap` a list to the yaml package, but neither is JSON.
    return refusal(target);
  } else {
    open.add(target);
    for (const item of target.items) {
      const inner = sizeOf(reader, item, open, sizes);
      if (typeof inner !== 'number') return inner;
      size += inner;
    }
    open.delete(target);
  }
  sizes.set(target, size);
  return size;
}

function read(reader: Reader, node: Node | null, what: string, reading: PlainReading): unknown {
  const size = sizeOf(reader, node, new Set(), reading.sizes);
  if (typeof size !== 'number') {
    reader.report(size.at, 'ERR_SLUICE_RULES_INVALID_VALUE', `${what} cannot be read: ${size.why}.`);
    return undefined;
  }
  reading.spent += size;
  if (reading.spent > reading.budget) {
    // Reported once, at the first value beyond the budget; the rest is left unread.
    if (reading.spent - size <= reading.budget)
      reader.report(
        node,
        'ERR_SLUICE_RULES_INVALID_VALUE',
        `The document's metadata, policies and throttles hold more than ${reading.budget} values, counting each alias as a copy of what it stands for: aliases that multiply each other are refused, not expanded.`,
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

/**
 * A node as plain data (metadata, core's options), aliases and merge keys resolved; `undefined`
 * when refused. A value read before (through an alias, or a descriptor repeated by one) is the
 * same value again, read and counted once.
 */
export function plainOf(reader: Reader, node: Node | null, what: string): unknown {
  const key = resolved(reader, node) ?? node;
  if (key === null || key === undefined) return undefined;
  const reading = readingOf(reader);
  if (reading.values.has(key)) return reading.values.get(key);
  const value = read(reader, node, what, reading);
  reading.values.set(key, value);
  return value;
}
