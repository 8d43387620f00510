import { channel } from 'node:diagnostics_channel';
import { reportedPolicyIndex } from './decision.js';
import {
  type DecisionEvent,
  type DecisionResult,
  type QueueEvent,
  type RefundEvent,
  type RulesReloadEvent,
  SLUICE_CHANNELS,
} from './event-types.js';
import { isTimeout } from './store-guard.js';
import type { Decision, OnStoreError, Policy, PolicyDecision, RateLimitStore } from './types.js';

const decisions = channel(SLUICE_CHANNELS.decision);

/** Whether anyone listens to `sluice:decision`: the one check a decision nobody watches pays. */
export const decisionsWatched = (): boolean => decisions.hasSubscribers;
const storeErrors = channel(SLUICE_CHANNELS.storeError);
const queue = channel(SLUICE_CHANNELS.queue);
const rulesReloads = channel(SLUICE_CHANNELS.rulesReload);
const refunds = channel(SLUICE_CHANNELS.refund);

/** Publishes a reload of rules on `sluice:rules-reload`, when anyone listens. */
export function publishRulesReload(event: RulesReloadEvent): void {
  if (rulesReloads.hasSubscribers) rulesReloads.publish(event);
}

/** Publishes a queue hold on `sluice:queue`, when anyone listens, and gives back what it published. */
export function publishQueueEvent<E extends QueueEvent>(event: () => E): E | undefined {
  if (!queue.hasSubscribers) return undefined;
  const published = event();
  queue.publish(published);
  return published;
}

/**
 * A stable, low-cardinality name for a store failure: the `error.type` of OpenTelemetry's
 * conventions. A timeout is `timeout`; otherwise the error's string `code`
 * (`ERR_SLUICE_STORE_UNAVAILABLE`, `ECONNRESET`), its class name (`ReplyError`), or `_OTHER`
 * for something that is not an Error.
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

/** The name of the policy whose figures the decision's top-level fields report; the first when none does. */
function reportedPolicy(decision: Decision): string {
  return (decision.policies[Math.max(0, reportedPolicyIndex(decision))] as PolicyDecision).name;
}

/** The error type of each decision a store failure made: concurrent failures each keep their own. */
const failures = new WeakMap<Decision, string>();

/** Events of queued decisions held back for the caller that holds the queue: see {@link publishQueued}. */
const awaitingQueue = new WeakMap<Decision, DecisionEvent>();

/**
 * Publishes the event of a queued decision taken for a caller that holds queued requests
 * itself (the HTTP layer, through `observe`'s `holdsQueue`): as decided when the request is
 * held, or as `refusal`, the 429 the client got, when the queue had no room (`maxQueued`).
 */
export function publishQueued(decision: Decision, refusal?: Decision): void {
  if (!decisions.hasSubscribers) return;
  const event = awaitingQueue.get(decision);
  if (event === undefined) return;
  awaitingQueue.delete(decision);
  decisions.publish(
    refusal === undefined
      ? event
      : { ...event, policy: reportedPolicy(refusal), result: decisionResult(refusal), decision: refusal },
  );
}

/** The store named in the decision events of a rule that blocks every request: none is asked. */
export const NO_STORE = 'none';

/**
 * Publishes a refusal no limiter's `consume` made, when anyone listens: a rule's that blocks
 * every request (`requests_per_unit: 0`), under the rule's id as its limiter and `NO_STORE`,
 * and a ban's in force, under the ban's limiter: a 429 or 403 it answers is counted and traced
 * as every other refusal.
 */
export function publishRefusal(
  limiter: string,
  store: string,
  policies: readonly Policy[],
  decision: Decision,
  cost: number,
): void {
  if (!decisions.hasSubscribers) return;
  decisions.publish({
    limiter,
    store,
    policies,
    policy: reportedPolicy(decision),
    result: decisionResult(decision),
    cost,
    storeDurationMs: undefined,
    errorType: undefined,
    decision,
  } satisfies DecisionEvent);
}

/**
 * The events of one limiter. `observe` wraps a decision only while someone listens to
 * `sluice:decision` (`decisionsWatched`), so a limiter nobody watches pays one check per call.
 * A limiter whose decisions are no requests' (a ban's counts, a health look) has them
 * `unpublished`, and publishes its store's failures only when that says `'store-errors'`.
 */
export function limiterEvents(
  limiter: string,
  store: RateLimitStore,
  policies: readonly Policy[],
  unpublished?: 'store-errors' | 'nothing',
) {
  const publish = (
    decision: Decision,
    cost: number,
    storeDurationMs: number | undefined,
    holdsQueue: boolean,
  ): Decision => {
    const result = decisionResult(decision);
    const event: DecisionEvent = {
      limiter,
      store: store.name,
      policies,
      policy: reportedPolicy(decision),
      result,
      cost,
      storeDurationMs,
      errorType: result === 'store_error' ? failures.get(decision) : undefined,
      decision,
    };
    // The caller may yet refuse it for a full queue: its event waits for `publishQueued`.
    if (holdsQueue && decision.delayMs > 0) awaitingQueue.set(decision, event);
    else decisions.publish(event);
    return decision;
  };

  return {
    /**
     * Runs `decide` and publishes what it decided. Nothing is published for a rejection, nor
     * for `undefined` (the synchronous path declining: `consume` then decides, and publishes).
     * Only a store that answers with a promise is timed: an in-process answer takes less time
     * than reading the clock twice would add to it. With `holdsQueue`, a decision with a delay
     * is published when the caller calls `publishQueued`.
     */
    observe<T extends Decision | Promise<Decision> | undefined>(
      key: string,
      cost: number,
      decide: (key: string, cost: number) => T,
      holdsQueue = false,
    ): T {
      if (unpublished !== undefined) return decide(key, cost);
      const startedAt = store.consumeSync === undefined ? performance.now() : undefined;
      const decision = decide(key, cost);
      if (decision === undefined) return decision;
      if (!(decision instanceof Promise)) return publish(decision as Decision, cost, undefined, holdsQueue) as T;
      return decision.then((d: Decision) =>
        publish(d, cost, startedAt === undefined ? undefined : performance.now() - startedAt, holdsQueue),
      ) as T;
    },
    storeFailed(cause: unknown, onStoreError: OnStoreError): void {
      if (storeErrors.hasSubscribers && unpublished !== 'nothing')
        storeErrors.publish({ limiter, store: store.name, errorType: errorType(cause), error: cause, onStoreError });
    },
    /** Publishes a charge the store gave back, when anyone listens. */
    refunded(cost: number): void {
      if (refunds.hasSubscribers && unpublished !== 'nothing')
        refunds.publish({ limiter, store: store.name, cost } satisfies RefundEvent);
    },
    /** Keeps the error type of the failure `cause` with the decision it made, for that decision's event. */
    failedWith(decision: Decision, cause: unknown): void {
      failures.set(decision, errorType(cause));
    },
  };
}
