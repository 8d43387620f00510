import { createRuleLimiters, type Limiter, type Logger, type PolicyOptions, type RateLimitStore } from '@sluice/core';
import type { Rule } from '@sluice/rules';
import { overrideWindowMs } from './units.js';
import type { DescriptorCall } from './wire-types.js';

export interface LimiterSettings {
  store: RateLimitStore;
  storeTimeoutMs: number;
  clock: (() => number) | undefined;
  logger: Logger;
}

type Override = NonNullable<DescriptorCall['limit']>;

/** Distinct overrides kept per rule: the values come from requests, so they are bounded. */
const MAX_OVERRIDES_PER_RULE = 64;

/**
 * The limiter for a rule, or for a rule under a descriptor's `limit` override. Rules get
 * core's rule limiters, as the adapters do: the same namespaces (from the rule's place and its
 * policies' names, algorithms and windows), so a changed limit keeps each client's count, and
 * the service and adapters on one Redis share counts. An override is Envoy's: it replaces the
 * limit and unit of the rule's first policy, keeping its name and algorithm, so an override
 * with the rule's own window counts in the rule's own state.
 */
export function createOverridableLimiters(settings: LimiterSettings) {
  const limiterOf = createRuleLimiters({
    store: settings.store,
    // The service answers a store failure with a gRPC error: the caller's own fail policy
    // (Envoy's `failure_mode_deny`, the Node client's `onStoreError`) then decides.
    onStoreError: 'throw',
    storeTimeoutMs: settings.storeTimeoutMs,
    ...(settings.clock === undefined ? {} : { clock: settings.clock }),
    logger: settings.logger,
  });
  const overridden = new WeakMap<Rule, Map<string, Rule>>();

  const overrideRule = (rule: Rule, override: Override): Rule => {
    let rules = overridden.get(rule);
    if (rules === undefined) {
      rules = new Map();
      overridden.set(rule, rules);
    }
    const key = `${override.requestsPerUnit}/${override.unit}`;
    let variant = rules.get(key);
    if (variant === undefined) {
      const first = limiterOf(rule).policies[0];
      const policy: PolicyOptions = {
        limit: override.requestsPerUnit,
        window: overrideWindowMs(override.unit),
        ...(first === undefined ? {} : { name: first.name, algorithm: first.algorithm }),
      };
      variant = { ...rule, policies: [policy] };
      // Map order is insertion order: the oldest override goes first.
      if (rules.size >= MAX_OVERRIDES_PER_RULE) rules.delete(rules.keys().next().value as string);
      rules.set(key, variant);
    }
    return variant;
  };

  return (rule: Rule, override: Override | undefined): Limiter =>
    limiterOf(override === undefined ? rule : overrideRule(rule, override));
}
