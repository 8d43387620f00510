import { channel } from 'node:diagnostics_channel';
import { isTimeout } from './store-guard.js';
import type { Decision, OnStoreError, Policy, PolicyDecision, RateLimitStore } from './types.js';

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
} as const;

/** How a decision ended, as metrics count it (`sluice.result`). */
export type DecisionResult = 'allowed' | 'limited' | 'soft' | 'elastic' | 'shadow' | 'queued' | 'store_error';

/** Published on `sluice:decision`. It carries the caller's key (in `decision.key`) and nothing else about the caller. */
export interface DecisionEvent {
  /** The limiter's namespace: its `prefix`, or the one derived from its policies. */
  readonly limiter: string;
  /** The store's name (`memory`, `redis`, …). */
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

/** Published on `sluice:queue`: `held` when the hold starts, `released` when it ends. */
export type QueueEvent =
  | { readonly phase: 'held'; readonly limiter: string; readonly delayMs: number }
  | {
      readonly phase: 'released';
      readonly limiter: string;
      readonly delayMs: number;
      /** How long the request was held, in ms. */
      readonly heldMs: number;
      /** False when the client went away before the hold ended. */
      readonly completed: boolean;
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

const decisions = channel(SLUICE_CHANNELS.decision);

/** Whether anyone listens to `sluice:decision`: the one check a decision nobody watches pays. */
export const decisionsWatched = (): boolean => decisions.hasSubscribers;
const storeErrors = channel(SLUICE_CHANNELS.storeError);
const queue = channel(SLUICE_CHANNELS.queue);
const rulesReloads = channel(SLUICE_CHANNELS.rulesReload);

/** Publishes a reload of rules on `sluice:rules-reload`, when anyone listens. */
export function publishRulesReload(event: RulesReloadEvent): void {
  if (rulesReloads.hasSubscribers) rulesReloads.publish(event);
}

/** Publishes a queue hold on `sluice:queue`, when anyone listens. */
export function publishQueueEvent(event: () => QueueEvent): void {
  if (queue.hasSubscribers) queue.publish(event());
}

/**
 * A stable, low-cardinality name for a store failure: the `error.type` of OpenTelemetry's
 * conventions. A timeout is `timeout`; otherwise the error's string `code` (`ECONNREFUSED`),
 * its class name (`ReplyError`), or `_OTHER` for something that is not an Error.
 */
export function errorType(cause: unknown): string {
  if (cause instanceof Error) {
    if (isTimeout(cause)) return 'timeout';
    const code = (cause as { code?: unknown }).code;
    return typeof code === 'string' ? code : cause.name;
  }
  return '_OTHER';
}

export function decisionResult(decision: Decision): DecisionResult {
  if (decision.reason === 'store-unavailable') return 'store_error';
  if (!decision.allowed) return 'limited';
  if (decision.overLimit !== undefined) return decision.overLimit;
  return decision.delayMs > 0 ? 'queued' : 'allowed';
}

/** The entry of `decision.policies` whose figures the decision's top-level fields report. */
function reportedPolicy(decision: Decision): string {
  const list = decision.policies;
  if (list.length === 1) return (list[0] as PolicyDecision).name;
  const top = list.find(
    (p) => p.limit === decision.limit && p.remaining === decision.remaining && p.resetAfterMs === decision.resetAfterMs,
  );
  return (top ?? (list[0] as PolicyDecision)).name;
}

/**
 * The events of one limiter. `observe` wraps a decision only while someone listens to
 * `sluice:decision` (`decisionsWatched`), so a limiter nobody watches pays one check per call.
 */
export function limiterEvents(limiter: string, store: RateLimitStore, policies: readonly Policy[]) {
  let lastErrorType: string | undefined;
  const publish = (decision: Decision, cost: number, storeDurationMs: number | undefined): Decision => {
    const result = decisionResult(decision);
    const event: DecisionEvent = {
      limiter,
      store: store.name,
      policies,
      policy: reportedPolicy(decision),
      result,
      cost,
      storeDurationMs,
      errorType: result === 'store_error' ? lastErrorType : undefined,
      decision,
    };
    decisions.publish(event);
    return decision;
  };

  return {
    /**
     * Runs `decide` and publishes what it decided. Nothing is published for a rejection, nor
     * for `undefined` (the synchronous path declining: `consume` then decides, and publishes).
     * Only a store that answers with a promise is timed: an in-process answer takes less time
     * than reading the clock twice would add to it.
     */
    observe<T extends Decision | Promise<Decision> | undefined>(
      key: string,
      cost: number,
      decide: (key: string, cost: number) => T,
    ): T {
      const startedAt = store.consumeSync === undefined ? performance.now() : undefined;
      const decision = decide(key, cost);
      if (decision === undefined) return decision;
      if (!(decision instanceof Promise)) return publish(decision as Decision, cost, undefined) as T;
      return decision.then((d: Decision) =>
        publish(d, cost, startedAt === undefined ? undefined : performance.now() - startedAt),
      ) as T;
    },
    storeFailed(cause: unknown, onStoreError: OnStoreError): void {
      lastErrorType = errorType(cause);
      if (storeErrors.hasSubscribers)
        storeErrors.publish({ limiter, store: store.name, errorType: lastErrorType, error: cause, onStoreError });
    },
  };
}
