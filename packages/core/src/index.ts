export type { Algorithm, ConvertedState, Evaluation, State, Values } from './algorithms/index.js';
export {
  algorithmNames,
  algorithms,
  convertState,
  convertStateWithReset,
  decide,
  refundStates,
  settleConvertedWaits,
} from './algorithms/index.js';
export { isOverLimitMark, reportedPolicyIndex } from './decision.js';
export type { Duration } from './duration.js';
export { formatMs, toMs } from './duration.js';
export { isEpochMs, MAX_EPOCH_MS } from './epoch-ms.js';
export type { SluiceErrorCode } from './errors.js';
export { describe, invalid, isSluiceError, messageOf, SluiceError, thrownError } from './errors.js';
export type {
  DecisionEvent,
  DecisionResult,
  QueueEvent,
  QueueHeldEvent,
  RefundEvent,
  RulesReloadEvent,
  StoreErrorEvent,
} from './event-types.js';
export { SLUICE_CHANNELS } from './event-types.js';
export { decisionResult, errorType, publishRulesReload } from './events.js';
export * from './http/index.js';
export {
  checkKnownOptions,
  checkOptionNames,
  closestName,
  LIMITER_OPTION_NAMES,
  POLICY_OPTION_NAMES,
} from './known-options.js';
export { createLimiter, createUnpublishedLimiter, STORE_DENY_RETRY_AFTER_MS, type Unpublished } from './limiter.js';
export { checkedLogger, isRateLimitStore, limiterSettings } from './limiter-settings.js';
export type { MemoryStore, MemoryStoreOptions } from './memory-store/index.js';
export { createMemoryStore, DEFAULT_MAX_KEYS, defaultMemoryStore } from './memory-store/index.js';
export { DEFAULT_ALGORITHM, MAX_UNITS, toPolicies, toPolicy } from './policy.js';
export { quietLogger } from './quiet-logger.js';
export { type ChargeTime, chargeAgesMsOf, chargeOf } from './refund-charge.js';
export { OUTAGE_QUIET_MS } from './store-guard.js';
export { safeWhenHeld, storeKey } from './store-key.js';
export { isThenable } from './thenable.js';
export { eventLoopLoad, toThrottle } from './throttle.js';
export { isTimerMs, MAX_TIMER_MS } from './timer.js';
export type * from './types.js';
