import type { Decision, OnStoreError, Policy } from './types.js';

/**
 * The `node:diagnostics_channel` channels sluice publishes on (SPEC §9). Subscribe with
 * `subscribe(SLUICE_CHANNELS.decision, onDecision)` from `node:diagnostics_channel`; nothing is
 * built or published while a channel has no subscriber.
 */
export const SLUICE_CHANNELS = {
  /** Every `consume` that reached a decision: {@link DecisionEvent}. */
  decision: 'sluice:decision',
  /** Every failed or timed-out store call, whatever the fail policy: {@link StoreErrorEvent}. */
  storeError: 'sluice:store-error',
  /** A queued request held by the HTTP layer, once when held and once when let go: {@link QueueEvent}. */
  queue: 'sluice:queue',
  /** A reload of rules, applied or rejected: {@link RulesReloadEvent}. */
  rulesReload: 'sluice:rules-reload',
  /** Every `refund` the store made: {@link RefundEvent}. */
  refund: 'sluice:refund',
} as const;

/** How a decision ended, as metrics count it (`sluice.result`). */
export type DecisionResult = 'allowed' | 'limited' | 'soft' | 'elastic' | 'shadow' | 'queued' | 'store_error';

/** Published on `sluice:decision`. It carries the caller's key (in `decision.key`) and nothing else about the caller. */
export interface DecisionEvent {
  /** The limiter's namespace: its `prefix`, or the one derived from its policies. */
  readonly limiter: string;
  /** The store's name (`memory`, `redis`, …); `none` for a rule that blocks every request, which asks no store. */
  readonly store: string;
  /** The limiter's policies: the same array on each of its decisions, and no other limiter's. */
  readonly policies: readonly Policy[];
  /** The policy whose figures the decision reports: the one that refused, or the one closest to its limit. */
  readonly policy: string;
  readonly result: DecisionResult;
  readonly cost: number;
  /**
   * From asking the store to holding the decision, in ms: the store's latency plus well under
   * a µs of core work. `undefined` for a store that answers in-process without a promise
   * (`memory`), whose answer is quicker than timing it.
   */
  readonly storeDurationMs: number | undefined;
  /** Set when `result` is `store_error`: what {@link errorType} made of the failure. */
  readonly errorType: string | undefined;
  readonly decision: Decision;
}

/** Published on `sluice:store-error`, for `consume`, `peek`, `reset` and `refund` alike. */
export interface StoreErrorEvent {
  readonly limiter: string;
  readonly store: string;
  /** `timeout`, the error's `code`, its `name`, or `_OTHER`: see {@link errorType}. */
  readonly errorType: string;
  readonly error: unknown;
  /** The limiter's `onStoreError`: `allow` is failing open. */
  readonly onStoreError: OnStoreError;
}

/**
 * Published on `sluice:refund` once the store has given a charge back (`refund`, which the
 * HTTP adapters call for the requests `skipSuccessfulRequests` or `skipFailedRequests` leave
 * uncounted, and for queued requests whose client left). The decision that made the charge was
 * published already: what counts against the quota is that decision less this refund.
 */
export interface RefundEvent {
  readonly limiter: string;
  readonly store: string;
  /** The units given back. */
  readonly cost: number;
}

/** Published on `sluice:queue` when a hold starts. */
export interface QueueHeldEvent {
  readonly phase: 'held';
  readonly limiter: string;
  readonly delayMs: number;
}

/** Published on `sluice:queue`: `held` when the hold starts, `released` when it ends. */
export type QueueEvent =
  | QueueHeldEvent
  | {
      readonly phase: 'released';
      readonly limiter: string;
      readonly delayMs: number;
      /** How long the request was held, in ms. */
      readonly heldMs: number;
      /** False when the client went away before the hold ended. */
      readonly completed: boolean;
      /**
       * The `held` event this hold began with, the same object; `undefined` when nobody listened
       * then. A subscriber that counts the requests held subtracts only the holds it added.
       */
      readonly hold: QueueHeldEvent | undefined;
    };

/** Published on `sluice:rules-reload` by whatever loads rules (`@sluice/rules`). */
export interface RulesReloadEvent {
  /** Where the rules came from: a file path or a name the loader chose. */
  readonly source: string;
  /** True when the new rules were applied; false when they were rejected and the old ones kept. */
  readonly ok: boolean;
  /** Why a reload was rejected. */
  readonly error?: unknown;
}
