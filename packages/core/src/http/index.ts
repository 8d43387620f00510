export type { AdapterBinding, HttpLimiter, Outcome, RateLimitHandle } from './adapter-contract.js';
export type { AllowList } from './allow-list.js';
export type { BanOptions } from './ban.js';
export type { ProxyTrust } from './client-address.js';
export { trustsStrangers, UNKNOWN_IP_KEY } from './client-address.js';
export { DEFAULT_IPV6_SUBNET, ipKey } from './client-key.js';
export type { CountByOutcomeOptions } from './count-by-outcome.js';
export { keepDecision, keptDecision } from './first-visit.js';
export { retryAfterMs as retryAfterFieldMs } from './headers/effective-window.js';
export type { HeadersOptions, HeaderTarget, HeaderWriter, ResolvedHeaders, StandardHeaders } from './headers/index.js';
export { checkHeaders, createHeaderWriter, lookupName } from './headers/index.js';
export { hold } from './hold.js';
export { createHttpLimiter } from './http-limiter.js';
export type { HttpLimiterOptions, HttpOptionsBase, LimitFor, PoliciesFor } from './http-options.js';
export { DEFAULT_MAX_QUEUED, HTTP_OPTION_NAMES } from './http-options.js';
export type { NotificationOptions } from './notifications.js';
export type { RateLimitProblem } from './problem.js';
export {
  ABNORMAL_USAGE_DETECTED_TYPE,
  PROBLEM_CONTENT_TYPE,
  problemBody,
  problemFor,
  problemJson,
  problemStatus,
  QUOTA_EXCEEDED_TYPE,
  TEMPORARY_REDUCED_CAPACITY_TYPE,
} from './problem.js';
export type { LimitedMessage, Refusal, RefusalOptions } from './refusal.js';
export type { HttpRouteOptions } from './route-options.js';
export { inRoute, mergeRouteOptions } from './route-options.js';
export type { DescriptorField } from './rules/request-descriptors.js';
export { DEFAULT_DESCRIPTORS } from './rules/request-descriptors.js';
export type { DescriptorEntryLike, RuleLike, RuleMatchLike, RuleSetLike, RulesOption } from './rules/rule-like.js';
export type { RuleVerdict } from './rules/rule-limiters.js';
export { combinedDecision, createRuleLimiters, decideRules, giveBack, passes } from './rules/rule-limiters.js';
export type { RulesHttpOptions } from './rules/rules-options.js';
export { isRuleSet } from './rules/rules-options.js';
export { sfSeconds } from './structured-fields.js';
export { MAX_TIER_LIMITERS } from './tier-limiters.js';
export type { SluiceWarningCode, WarnOnce } from './warnings.js';
export { createWarnOnce } from './warnings.js';
