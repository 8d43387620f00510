import {
  createRuleLimiters,
  isSluiceError,
  type Limiter,
  type Logger,
  type RateLimitStore,
  type RuleLike,
} from '@sluice/core';
import { coreVerdict, type RuleProblem, type RuleSet, RulesError } from '@sluice/rules';

export interface LimiterSettings {
  store: RateLimitStore;
  storeTimeoutMs: number;
  clock: (() => number) | undefined;
  logger: Logger;
}

/**
 * The limiter of each rule (or override variant, `override-rules.ts`): core's rule limiters,
 * as the adapters have them, under the same namespaces (the rule's id, from its place), so a
 * changed limit, window or algorithm keeps what each client has spent, and the service and
 * adapters on one Redis share counts.
 */
export function createServiceLimiters(settings: LimiterSettings): (rule: RuleLike) => Limiter {
  return createRuleLimiters({
    store: settings.store,
    // The service answers a store failure with a gRPC error: the caller's own fail policy
    // (Envoy's `failure_mode_deny`, the Node client's `onStoreError`) then decides.
    onStoreError: 'throw',
    storeTimeoutMs: settings.storeTimeoutMs,
    ...(settings.clock === undefined ? {} : { clock: settings.clock }),
    logger: settings.logger,
  });
}

/**
 * Makes the limiter of every rule of `rules` now: a set the store cannot decide (more policies
 * in one rule than the Redis store takes) then fails where it is loaded, at start-up or as a
 * refused reload, instead of failing every call it matches. Throws the `RulesError` naming each
 * such rule where it is written.
 */
export function checkRuleLimiters(rules: RuleSet, limiterOf: (rule: RuleLike) => Limiter): void {
  const problems: RuleProblem[] = [];
  for (const rule of rules.rules) {
    // Blocked and unlimited rules are answered without a limiter.
    if (rule.policies.length === 0) continue;
    try {
      limiterOf(rule);
    } catch (error) {
      if (!isSluiceError(error)) throw error;
      problems.push({ code: 'ERR_SLUICE_RULES_INVALID_POLICY', message: coreVerdict(error), ...rule.location });
    }
  }
  if (problems.length > 0) throw new RulesError(problems);
}
