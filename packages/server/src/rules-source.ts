import type { RuleSet, RulesWatcher } from '@sluice/rules';

/** A rule set, or a watcher (`watchRules`) whose `current` set is read afresh for every call. */
export type RulesSource = RuleSet | Pick<RulesWatcher, 'current'>;

export const currentRules = (source: RulesSource): RuleSet => ('current' in source ? source.current : source);
