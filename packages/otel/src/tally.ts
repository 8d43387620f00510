import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import {
  type DecisionEvent,
  type DecisionResult,
  type Policy,
  type QueueEvent,
  type RefundEvent,
  type RulesReloadEvent,
  SLUICE_CHANNELS,
  type StoreErrorEvent,
} from '@sluice/core';

/**
 * Envoy's `near_limit` share: an allowed decision counts as near the limit when its policy has
 * more than ⌊capacity × 0.8⌋ units in use after it (envoyproxy/ratelimit's `NEAR_LIMIT_RATIO`).
 */
export const NEAR_LIMIT_RATIO = 0.8;

/**
 * Counts kept apart, at most: a limiter takes one (its queue depth), and so do its refunds, each
 * result of each of its policies (a series of `sluice.decisions`), each type of error of each
 * of its stores, each way its queue's holds end (completed or not, a series of
 * `sluice.queue.duration`) and each store past the first its answers are timed on (a series of
 * `sluice.store.duration`). OpenTelemetry SDKs report at most 2,000 series of an instrument by
 * default (1,999 with attributes of their own) and fold the rest into one series with no
 * attribute but `otel.metric.overflow`. A limiter makes several series, and limiter names can
 * come from data (each `policies(req)` tier is a limiter of its own), so the bound counts
 * series, not limiters: no instrument has more series than the counts kept, and the overflow's
 * few besides, well under the SDK's cap.
 */
export const MAX_COUNTED_SERIES = 1000;

/**
 * The name the counts past {@link MAX_COUNTED_SERIES} go under, with one policy of the same
 * name: no limiter or policy is named with the empty string.
 */
export const OVERFLOW = '';

/**
 * The error type of the store errors counted past the bound: OpenTelemetry's semantic
 * conventions' value for an `error.type` not told apart. Error types come from the failures
 * themselves (an error's `code`), so past the bound they are folded, or the overflow's counts
 * would grow with every new one.
 */
export const OTHER_ERROR = '_OTHER';

const RESULTS: readonly DecisionResult[] = ['allowed', 'limited', 'soft', 'elastic', 'shadow', 'queued', 'store_error'];

/** Counts of one policy of one limiter. */
export interface PolicyTally {
  readonly limiter: string;
  readonly policy: string;
  readonly decisions: Record<DecisionResult, number>;
  /** Allowed or queued decisions that left fewer than `nearBelow` units. */
  nearLimit: number;
  /**
   * `store_error` decisions that let the request through: under `onStoreError: 'allow'`, and in
   * shadow mode whatever the fail policy (shadow mode refuses nothing, not even for a failed store).
   */
  failOpen: number;
  /** The threshold of the version last seen: a changed limit under the same name moves it. */
  nearBelow: number;
}

/** Counts of one limiter, or of everything past the bound ({@link OVERFLOW}). */
export interface LimiterTally {
  readonly limiter: string;
  readonly policies: Map<string, PolicyTally>;
  /** Store failures by store and error type. */
  readonly storeErrors: Map<string, { store: string; errorType: string; count: number }>;
  /** Requests the HTTP layer holds in its queue now, of those whose hold this tally saw begin. */
  held: number;
  /** Charges the store gave back (`refund`), each after its decision was counted. */
  refunds: number;
  /** The ways its holds ended that have a count (a series of `sluice.queue.duration`): completed, not completed. */
  readonly holdEndings: Set<boolean>;
  /**
   * The stores whose answers it timed (a series of `sluice.store.duration` each): the first on
   * the limiter's own count, each other (limiters of one name on several stores) on one of its own.
   */
  readonly timedStores: Set<string>;
}

const errorKey = (store: string, errorType: string): string => `${store}\u0000${errorType}`;

/** The counts of one meter provider: kept across `disable()` and a later `enableMetrics` on it. */
export interface TallyCounts {
  readonly limiters: Map<string, LimiterTally>;
  readonly reloads: Map<string, { source: string; applied: number; rejected: number }>;
  /** The counts kept apart, against {@link MAX_COUNTED_SERIES}; those of the overflow are not among them. */
  series: number;
}

export const createCounts = (): TallyCounts => ({ limiters: new Map(), reloads: new Map(), series: 0 });

export interface Hooks {
  /**
   * A decision timed by core (a store that answers with a promise), of `limiter` as counted, its
   * failure's `errorType` as counted (`OTHER_ERROR` past the bound).
   */
  storeDuration(limiter: string, store: string, errorType: string | undefined, ms: number): void;
  queueReleased(limiter: string, event: Extract<QueueEvent, { phase: 'released' }>): void;
}

/**
 * Counts sluice's events into `kept`, plain objects, the cheapest place to count: a decision
 * costs three comparisons and an increment, and two map reads when its limiter or policy is not
 * the last one's. Exporters read the counts when they collect. Counts go on from where `kept`
 * stands, since the SDK remembers the totals it last read; the queue's depth starts from 0, as
 * the releases of holds begun before now are not subtracted.
 */
/** The counts a tally keeps, read when an exporter collects. */
export interface Tally {
  // `IterableIterator`, not the `MapIterator` TypeScript would infer: that type is only in the
  // libraries of TypeScript 5.6 and later, and the declarations must load in older ones.
  limiters(): IterableIterator<LimiterTally>;
  reloads(): IterableIterator<{ source: string; applied: number; rejected: number }>;
  close(): void;
}

export function createTally(hooks: Hooks, kept: TallyCounts): Tally {
  const { limiters, reloads } = kept;
  for (const tally of limiters.values()) tally.held = 0;
  /** The `held` events this tally counted: only their releases may subtract. */
  const counted = new WeakSet<QueueEvent>();

  const room = (series: number): boolean => kept.series + series <= MAX_COUNTED_SERIES;
  const newLimiter = (limiter: string): LimiterTally => {
    const tally = {
      limiter,
      policies: new Map(),
      storeErrors: new Map(),
      held: 0,
      refunds: 0,
      holdEndings: new Set<boolean>(),
      timedStores: new Set<string>(),
    };
    limiters.set(limiter, tally);
    if (limiter !== OVERFLOW) kept.series++;
    return tally;
  };
  const overflow = (): LimiterTally => limiters.get(OVERFLOW) ?? newLimiter(OVERFLOW);
  const limiterOf = (limiter: string): LimiterTally =>
    limiters.get(limiter) ?? (room(1) ? newLimiter(limiter) : overflow());

  const policyIn = (tally: LimiterTally, policy: string): PolicyTally => {
    let counts = tally.policies.get(policy);
    if (counts === undefined) {
      const decisions = Object.fromEntries(RESULTS.map((r) => [r, 0])) as Record<DecisionResult, number>;
      counts = { limiter: tally.limiter, policy, decisions, nearLimit: 0, failOpen: 0, nearBelow: 0 };
      tally.policies.set(policy, counts);
    }
    return counts;
  };

  /**
   * The counts of a policy by name, with the threshold of the version `policies` holds: two
   * versions of a limiter (a rules reload, a rolling deploy) count under one name, each against
   * its own capacity. Asked only when the decision's limiter or policy is not the last one's.
   */
  const policyOf = ({ limiter, policy, policies }: DecisionEvent): PolicyTally => {
    const capacity = policies.find((p) => p.name === policy)?.capacity ?? 0;
    const tally = limiters.get(limiter);
    let counts = tally?.policies.get(policy);
    if (counts === undefined) {
      // A policy is a series of `sluice.near_limit` by itself: it is opened only with room for
      // its limiter, when new, and for the first result, which `onDecision` then takes.
      counts = room(tally === undefined ? 2 : 1)
        ? policyIn(tally ?? newLimiter(limiter), policy)
        : policyIn(overflow(), OVERFLOW);
    }
    counts.nearBelow = capacity - Math.floor(capacity * NEAR_LIMIT_RATIO);
    return counts;
  };

  /** The counts a result not counted yet for `counts` goes to: its own series, or past the bound the overflow's. */
  const opened = (counts: PolicyTally): PolicyTally => {
    if (room(1)) {
      kept.series++;
      return counts;
    }
    const past = policyIn(overflow(), OVERFLOW);
    past.nearBelow = counts.nearBelow;
    return past;
  };

  // Decisions come in runs from one limiter and policy: the counts found last are tried first.
  // A limiter's events carry its own policies array, which no other limiter's carry, so the
  // array and the policy's name (one shared copy of its text, compared by address) name the
  // counts. Kept in an object: the optimising compiler checks a closure's `let` for its
  // temporal dead zone at every read.
  const last = {
    policies: undefined as readonly Policy[] | undefined,
    policy: '',
    counts: undefined as PolicyTally | undefined,
  };
  const countsFor = (event: DecisionEvent): PolicyTally => {
    const counts = policyOf(event);
    last.counts = counts;
    last.policies = event.policies;
    last.policy = event.policy;
    return counts;
  };

  const onDecision = (message: unknown): void => {
    const event = message as DecisionEvent;
    const { result, decision } = event;
    let counts =
      event.policies === last.policies && event.policy === last.policy
        ? (last.counts as PolicyTally)
        : countsFor(event);
    if (counts.decisions[result] === 0 && counts.limiter !== OVERFLOW) counts = opened(counts);
    counts.decisions[result]++;
    if ((result === 'allowed' || result === 'queued') && decision.remaining < counts.nearBelow) counts.nearLimit++;
    else if (result === 'store_error' && decision.allowed) counts.failOpen++;
    if (event.storeDurationMs !== undefined) timed(counts.limiter, event, event.storeDurationMs);
  };

  /**
   * A timed call, under its error type as `onStoreError` counted it (published before the
   * decision): one folded into `_OTHER` went to the overflow's counts, and so does its time.
   */
  const timed = (limiter: string, { store, errorType }: DecisionEvent, ms: number): void => {
    const tally = limiters.get(limiter) as LimiterTally;
    if (errorType !== undefined) {
      if (tally.storeErrors.has(errorKey(store, errorType))) hooks.storeDuration(limiter, store, errorType, ms);
      else hooks.storeDuration(OVERFLOW, store, OTHER_ERROR, ms);
      return;
    }
    hooks.storeDuration(apart(tally, tally.timedStores, store, 1).limiter, store, undefined, ms);
  };

  /** Where a limiter's count not kept yet goes: its own new series, or past the bound the overflow's. */
  const opening = (tally: LimiterTally): LimiterTally => {
    if (tally.limiter === OVERFLOW) return tally;
    if (!room(1)) return overflow();
    kept.series++;
    return tally;
  };

  /**
   * Where a series of `tally`'s for `value` goes: its own once `value` is in `seen`, which takes
   * a count of the bound for each value past its first `free`; past the bound, the overflow's.
   */
  const apart = <T>(tally: LimiterTally, seen: Set<T>, value: T, free = 0): LimiterTally => {
    if (seen.has(value)) return tally;
    const answered = seen.size < free ? tally : opening(tally);
    if (answered === tally) seen.add(value);
    return answered;
  };

  const onStoreError = (message: unknown): void => {
    const { limiter, store } = message as StoreErrorEvent;
    let { errorType } = message as StoreErrorEvent;
    let key = errorKey(store, errorType);
    let tally = limiterOf(limiter);
    if (!tally.storeErrors.has(key)) tally = opening(tally);
    if (tally.limiter === OVERFLOW) {
      errorType = OTHER_ERROR;
      key = errorKey(store, errorType);
    }
    const entry = tally.storeErrors.get(key);
    if (entry === undefined) tally.storeErrors.set(key, { store, errorType, count: 1 });
    else entry.count++;
  };

  const onRefund = (message: unknown): void => {
    let tally = limiterOf((message as RefundEvent).limiter);
    if (tally.refunds === 0) tally = opening(tally);
    tally.refunds++;
  };

  const onQueue = (message: unknown): void => {
    const event = message as QueueEvent;
    const tally = limiterOf(event.limiter);
    if (event.phase === 'held') {
      tally.held++;
      counted.add(event);
    } else {
      // A hold begun before this tally subscribed (or while metrics were off) was never added.
      if (event.hold !== undefined && counted.delete(event.hold)) tally.held--;
      hooks.queueReleased(apart(tally, tally.holdEndings, event.completed).limiter, event);
    }
  };

  const onReload = (message: unknown): void => {
    const { source, ok } = message as RulesReloadEvent;
    let entry = reloads.get(source);
    if (entry === undefined) {
      entry = { source, applied: 0, rejected: 0 };
      reloads.set(source, entry);
    }
    if (ok) entry.applied++;
    else entry.rejected++;
  };

  const listeners: [string, (message: unknown) => void][] = [
    [SLUICE_CHANNELS.decision, onDecision],
    [SLUICE_CHANNELS.storeError, onStoreError],
    [SLUICE_CHANNELS.refund, onRefund],
    [SLUICE_CHANNELS.queue, onQueue],
    [SLUICE_CHANNELS.rulesReload, onReload],
  ];
  for (const [name, listener] of listeners) subscribe(name, listener);

  return {
    limiters: limiters.values.bind(limiters),
    reloads: reloads.values.bind(reloads),
    close(): void {
      for (const [name, listener] of listeners) unsubscribe(name, listener);
    },
  };
}
