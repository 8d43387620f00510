import { type Document, type Node, visit } from 'yaml';
import type { Reader } from './reader.js';

/**
 * The fewest descriptors a document may read, each alias (`*name`, `<<: *name`) counting as a
 * copy of what it stands for; a document with more YAML nodes may read one per node. Reading
 * is linear in the text then: aliases that multiply each other (a "billion laughs" of
 * descriptors) stop here instead of stalling a watcher's event loop for seconds.
 */
export const MIN_DESCRIPTOR_BUDGET = 10_000;

/** Tracks one document's descriptor tree as it is read, through aliases. */
export interface DescriptorWalk {
  /**
   * Whether a descriptor (a mapping) or a `descriptors` list may be read now; `false`, reported
   * at `at` (the alias, where there is one), when it contains itself or the budget is spent.
   * Each entered node is left with `leave` once read.
   */
  enter(node: Node, at: Node | null, kind: 'descriptor' | 'list'): boolean;
  leave(node: Node): void;
}

const nodeCounts = new WeakMap<Document, number>();

/** How many YAML nodes (scalars, aliases, mappings, lists, key–value pairs) a document holds: what its budgets scale with. */
export function nodeCountOf(doc: Document): number {
  let nodes = nodeCounts.get(doc);
  if (nodes === undefined) {
    let counted = 0;
    visit(doc, () => {
      counted++;
    });
    nodes = counted;
    nodeCounts.set(doc, nodes);
  }
  return nodes;
}

export function createDescriptorWalk(reader: Reader): DescriptorWalk {
  const budget = Math.max(MIN_DESCRIPTOR_BUDGET, nodeCountOf(reader.doc));
  let read = 0;
  // The descriptors and lists from the top down to the one being read: an alias back to one
  // of them makes a tree without end.
  const open = new Set<Node>();
  return {
    enter(node, at, kind) {
      if (open.has(node)) {
        const what = kind === 'list' ? 'list of descriptors' : 'descriptor';
        reader.report(
          at ?? node,
          'ERR_SLUICE_RULES_INVALID_VALUE',
          `An alias or merge key here refers to a ${what} that contains it: the descriptors would never end.`,
        );
        return false;
      }
      if (kind === 'descriptor' && ++read > budget) {
        // Reported once, at the first descriptor beyond the budget; the rest is left unread.
        if (read === budget + 1)
          reader.report(
            at ?? node,
            'ERR_SLUICE_RULES_INVALID_VALUE',
            `The document reads more than ${budget} descriptors, counting each alias as a copy of what it stands for: aliases that multiply each other are refused, not expanded.`,
          );
        return false;
      }
      open.add(node);
      return true;
    },
    leave(node) {
      open.delete(node);
    },
  };
}
