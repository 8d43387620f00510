import type { PolicyOptions } from '@sluice/core';
import type { Rule, RuleSet } from '@sluice/rules';

/**
 * The rules being served, one line each, as envoyproxy/ratelimit's `/rlconfig` lists them
 * (`domain.key_value.key: unit=MINUTE requests_per_unit=10, shadow_mode: false`), with what
 * an operator needs besides: the limiter each counts under, the `sluice_limiter` label of
 * `/metrics` (a rule's id, which says nothing of the rule), and where the rule is written.
 */
export function listRules(rules: RuleSet): string {
  return rules.rules.map((rule) => `${ruleKey(rule)}: ${limits(rule)}, ${extras(rule)}\n`).join('');
}

/** Envoy's key of a rule: the domain, then each level's `key_value`, or `key` where it has no value. */
const ruleKey = (rule: Rule): string =>
  [rule.domain, ...rule.path.map(({ key, value }) => (value === undefined ? key : `${key}_${value}`))].join('.');

function limits(rule: Rule): string {
  if (rule.unlimited) return 'unlimited';
  const { rateLimit } = rule;
  if (rateLimit !== undefined)
    return `unit=${rateLimit.unit.toUpperCase()} requests_per_unit=${rateLimit.requestsPerUnit}`;
  return rule.policies.map(describePolicy).join(' ');
}

const describePolicy = (policy: PolicyOptions): string => {
  const window = typeof policy.window === 'number' ? `${policy.window}ms` : policy.window;
  const how = [
    policy.algorithm,
    policy.burst === undefined ? undefined : `burst ${policy.burst}`,
    policy.queue === undefined ? undefined : `queue ${policy.queue.maxDelayMs}ms`,
  ].filter((part) => part !== undefined);
  return `${policy.name}=${policy.limit}/${window}${how.length === 0 ? '' : `(${how.join(' ')})`}`;
};

function extras(rule: Rule): string {
  const flags = [`shadow_mode: ${rule.shadowMode}`];
  if (rule.quotaMode) flags.push('quota_mode: true');
  if (rule.name !== undefined) flags.push(`name: ${rule.name}`);
  if (rule.replaces.length > 0) flags.push(`replaces: ${rule.replaces.join(' ')}`);
  const { source, line } = rule.location;
  flags.push(`limiter: ${rule.id}`, `at: ${source}:${line}`);
  return flags.join(', ');
}
