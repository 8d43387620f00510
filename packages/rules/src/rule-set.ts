import type { TreeNode } from './read-descriptors.js';
import type { Descriptor, Rule, RuleMatch, RuleSet } from './types.js';
import { isWildcard, wildcardMatcher } from './wildcard.js';

/** The document of one domain, as read. */
export interface DomainRules {
  readonly domain: string;
  readonly nodes: readonly TreeNode[];
}

interface Compiled {
  readonly rule: Rule | undefined;
  readonly children: Level | undefined;
  /** True when the request's value at this level is part of the client key. */
  readonly perValue: boolean;
}

interface Branch {
  readonly exact: Map<string, Compiled>;
  readonly wildcards: { readonly test: (value: string) => boolean; readonly node: Compiled }[];
  bare: Compiled | undefined;
}

type Level = Map<string, Branch>;

function compileLevel(nodes: readonly TreeNode[]): Level | undefined {
  if (nodes.length === 0) return undefined;
  const level: Level = new Map();
  for (const node of nodes) {
    let branch = level.get(node.key);
    if (branch === undefined) {
      branch = { exact: new Map(), wildcards: [], bare: undefined };
      level.set(node.key, branch);
    }
    const wildcard = node.value !== undefined && isWildcard(node.value);
    const compiled: Compiled = {
      rule: node.rule,
      children: compileLevel(node.children),
      perValue: node.value === undefined || (wildcard && !node.shareThreshold),
    };
    if (node.value === undefined) branch.bare = compiled;
    else if (wildcard) branch.wildcards.push({ test: wildcardMatcher(node.value), node: compiled });
    else branch.exact.set(node.value, compiled);
  }
  return level;
}

/**
 * envoyproxy/ratelimit's walk: entry i is looked up at depth i, first by key and value, then
 * against the wildcard values in document order, then by key alone; the rule applies only
 * when the last entry lands on a descriptor that has one (same depth, no backtracking).
 */
function walk(level: Level | undefined, descriptor: Descriptor): RuleMatch | undefined {
  let node: Compiled | undefined;
  let key = '';
  for (let i = 0; i < descriptor.length; i++) {
    if (level === undefined) return undefined;
    const entry = descriptor[i] as Descriptor[number];
    const branch = level.get(entry.key);
    if (branch === undefined) return undefined;
    node = branch.exact.get(entry.value);
    if (node === undefined) {
      for (const wildcard of branch.wildcards) {
        if (wildcard.test(entry.value)) {
          node = wildcard.node;
          break;
        }
      }
      node ??= branch.bare;
      if (node === undefined) return undefined;
    }
    if (node.perValue) key += `${entry.value.length}:${entry.value}`;
    level = node.children;
  }
  const rule = node?.rule;
  return rule === undefined ? undefined : { rule, key: key === '' ? '*' : key };
}

function collect(nodes: readonly TreeNode[], into: Rule[]): Rule[] {
  for (const node of nodes) {
    if (node.rule !== undefined) into.push(node.rule);
    collect(node.children, into);
  }
  return into;
}

/** Compiles validated domains into an immutable rule set. Domains must be distinct. */
export function createRuleSet(domains: readonly DomainRules[], sources: readonly string[]): RuleSet {
  const levels = new Map<string, Level | undefined>();
  for (const { domain, nodes } of domains) levels.set(domain, compileLevel(nodes));
  const rules = Object.freeze(domains.flatMap(({ nodes }) => collect(nodes, [])));
  const replacing = rules.some((rule) => rule.replaces.length > 0);

  const matchOne = (domain: string, descriptor: Descriptor): RuleMatch | undefined =>
    walk(levels.get(domain), descriptor);

  return Object.freeze({
    domains: Object.freeze(domains.map((d) => d.domain)),
    rules,
    sources: Object.freeze([...sources]),
    matchOne,
    match(domain: string, descriptors: readonly Descriptor[]) {
      const level = levels.get(domain);
      const matches = descriptors.map((descriptor) => walk(level, descriptor));
      if (!replacing) return matches;
      const replaced = new Set(matches.flatMap((m) => m?.rule.replaces ?? []));
      // As envoyproxy/ratelimit, an `unlimited` rule may replace others but is never replaced:
      // its descriptor is answered unlimited whatever else the request matched.
      const dropped = (m: RuleMatch | undefined) =>
        m !== undefined && !m.rule.unlimited && m.rule.name !== undefined && replaced.has(m.rule.name);
      return matches.map((m) => (dropped(m) ? undefined : m));
    },
  });
}
