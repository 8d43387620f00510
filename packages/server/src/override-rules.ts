import { createHash } from 'node:crypto';
import { type PolicyOptions, type RuleLike, type RuleMatchLike, toMs } from '@sluice/core';
import type { RuleSet } from '@sluice/rules';
import { overrideWindowMs } from './units.js';
import type { DescriptorCall, RateLimitCall } from './wire-types.js';

type Override = NonNullable<DescriptorCall['limit']>;
type Entries = DescriptorCall['entries'];

/** Distinct overrides kept per rule: the values come from requests, so they are bounded. */
const MAX_OVERRIDES_PER_RULE = 64;

/** What a descriptor that no rule limits counts under: its every key and value, length-prefixed. */
const entriesKey = (entries: Entries): string =>
  entries.map(({ key, value }) => `${key.length}:${key}${value.length}:${value}`).join('');

/**
 * The rule each descriptor is decided by, with envoyproxy/ratelimit's `GetLimit` for a
 * descriptor's `limit` override: in a domain the rules know, the override limits the
 * descriptor whether or not a rule matches it (an `unlimited` or blocked rule too), as a plain
 * limit: no shadow mode, no `quota_mode`, no throttle, neither replacing nor replaced. In a
 * domain the rules do not know, it limits nothing.
 *
 * The counter follows envoyproxy's, whose key is the descriptor's entries and the window: over
 * a matched rule the override counts under the rule's first policy's name and algorithm, in
 * the rule's own namespace for the first policy's window (so it reads the rule's own count)
 * and in a namespace of its window's otherwise; with no rule, per descriptor entries in a
 * fixed window, under one namespace per domain.
 */
export function createRuleMatcher() {
  const variants = new WeakMap<RuleLike, Map<string, RuleLike>>();
  const domainRules = new Map<string, RuleLike>();

  const domainRule = (domain: string): RuleLike => {
    let rule = domainRules.get(domain);
    if (rule === undefined) {
      // `o.`: never a rules document's id (`r.…`), so never its namespace.
      const id = `o.${createHash('sha256').update(domain).digest('base64url').slice(0, 16)}`;
      rule = { id, policies: [], throttle: undefined, unlimited: false, blocked: false, rateLimit: undefined };
      domainRules.set(domain, rule);
    }
    return rule;
  };

  const overridden = (rule: RuleLike, override: Override): RuleLike => {
    let rules = variants.get(rule);
    if (rules === undefined) {
      rules = new Map();
      variants.set(rule, rules);
    }
    const key = `${override.requestsPerUnit}/${override.unit}`;
    let variant = rules.get(key);
    if (variant === undefined) {
      variant = override.requestsPerUnit === 0 ? blockedFor(rule, override) : limitFor(rule, override);
      // Map order is insertion order: the override used longest ago goes first.
      if (rules.size >= MAX_OVERRIDES_PER_RULE) rules.delete(rules.keys().next().value as string);
    } else {
      // Moved to the end as used: evicted by age of insertion, a variant could be rebuilt between
      // two descriptors of one call, whose copies of one descriptor were then decided apart.
      rules.delete(key);
    }
    rules.set(key, variant);
    return variant;
  };

  return function matchRules(rules: RuleSet, call: RateLimitCall): (RuleMatchLike | undefined)[] {
    const { domain, descriptors } = call;
    if (descriptors.every((d) => d.limit === undefined)) {
      return rules.match(
        domain,
        descriptors.map((d) => d.entries),
      );
    }
    // `replaces` works among the rules matched without an override only, as in envoyproxy,
    // where an override's limit has no name and replaces nothing.
    const matched = rules.match(
      domain,
      descriptors.flatMap((d) => (d.limit === undefined ? [d.entries] : [])),
    );
    const known = rules.domains.includes(domain);
    let next = 0;
    return descriptors.map(({ entries, limit }): RuleMatchLike | undefined => {
      if (limit === undefined) return matched[next++];
      if (!known) return undefined;
      const match = rules.matchOne(domain, entries);
      return match === undefined
        ? { rule: overridden(domainRule(domain), limit), key: entriesKey(entries) }
        : { rule: overridden(match.rule, limit), key: match.key };
    });
  };
}

/** An override of 0 refuses every call and counts nothing, as a rule of 0 does. */
function blockedFor(rule: RuleLike, override: Override): RuleLike {
  const windowMs = overrideWindowMs(override.unit);
  const id = `${rule.id}.${windowMs}.blocked`;
  return { id, policies: [], throttle: undefined, unlimited: false, blocked: true, rateLimit: { windowMs } };
}

/** The rule an override's limit makes of `rule`: a plain limit, counted as envoyproxy's counter is. */
function limitFor(rule: RuleLike, override: Override): RuleLike {
  const first = rule.policies[0];
  // A rule without policies (unlimited, blocked, none at all) counts as envoyproxy does.
  const algorithm = first === undefined ? 'fixed-window' : first.algorithm;
  const windowMs = overrideWindowMs(override.unit);
  const policy: PolicyOptions = {
    name: first?.name ?? `per-${override.unit.toLowerCase()}`,
    limit: override.requestsPerUnit,
    window: windowMs,
    ...(algorithm === undefined ? {} : { algorithm }),
  };
  return {
    // envoyproxy's counter is the descriptor's and the window's: in the rule's own unit the
    // override counts in the rule's namespace, in another unit in one of that unit's own.
    id: first !== undefined && toMs(first.window, 'window') === windowMs ? rule.id : `${rule.id}.${windowMs}`,
    policies: [policy],
    throttle: undefined,
    unlimited: false,
    blocked: false,
    rateLimit: undefined,
  };
}
