import { algorithms, decide, type Policy, type State, type StoreReply, type StoreRequest } from '@sluice/core';

/**
 * What one process knows of one policy of one client in local-first mode: the algorithm's
 * state as of the last sync plus this process's own charges since (`view`), and this
 * process's cumulative count per window (`own`), which the sync writes to Redis.
 */
export interface PolicyCounts {
  view: State | undefined;
  own: Map<number, number>;
}

/** One client of one limiter, as this process sees it. */
export interface ClientCounts {
  readonly namespace: string;
  readonly key: string;
  readonly policies: readonly Policy[];
  readonly counts: PolicyCounts[];
  /** The latest `now` a decision used: syncs pick their windows by it (an injected clock works). */
  lastNow: number;
  /** Decided on since the last sync: read back at the next one even with nothing to write. */
  touched: boolean;
  /** Idle through a whole sync: its view is old, so it is read again before it decides. */
  stale: boolean;
}

export function newClientCounts(request: StoreRequest, now: number): ClientCounts {
  return {
    namespace: request.namespace,
    key: request.key,
    policies: request.policies,
    counts: request.policies.map(() => ({ view: undefined, own: new Map() })),
    lastNow: now,
    touched: false,
    stale: true,
  };
}

/**
 * Decides from local counts with core's `decide`, so the reply is the one any store gives on
 * that state; `share` scales the capacities while Redis is out of reach.
 */
export function decideLocally(client: ClientCounts, request: StoreRequest, now: number, share: number): StoreReply {
  const { policies, capacities, cost } = request;
  const scaled = share === 1 ? capacities : capacities.map((capacity) => Math.floor(capacity * share));
  const views = client.counts.map((counts) => counts.view);
  const { next, ...reply } = decide(views, policies, scaled, cost, now);
  if (next !== undefined) {
    for (let i = 0; i < policies.length; i++) {
      const counts = client.counts[i] as PolicyCounts;
      counts.view = next[i];
      charge(counts.own, windowOf(policies[i] as Policy, now), cost);
    }
  }
  client.lastNow = Math.max(client.lastNow, now);
  client.touched = true;
  return reply;
}

/** Gives units back to this process's count of the current window (never below zero). */
export function refundLocally(client: ClientCounts, request: StoreRequest, now: number): void {
  for (let i = 0; i < client.policies.length; i++) {
    const policy = client.policies[i] as Policy;
    const counts = client.counts[i] as PolicyCounts;
    const window = windowOf(policy, now);
    const given = Math.min(request.cost, counts.own.get(window) ?? 0);
    if (given > 0) counts.own.set(window, (counts.own.get(window) as number) - given);
    counts.view = algorithms[policy.algorithm].refund(counts.view, policy, request.capacities[i] as number, given, now);
  }
  client.touched = true;
}

export const windowOf = (policy: Policy, now: number): number => Math.floor(now / policy.windowMs);

function charge(own: Map<number, number>, window: number, cost: number): void {
  own.set(window, (own.get(window) ?? 0) + cost);
  // Only the current window and the one before it still count.
  for (const old of own.keys()) if (old < window - 1) own.delete(old);
}

/**
 * The view after a sync that found `sums` (every process's total, this one's as `sent`) for
 * `window` and the one before: the fleet's count plus what this process charged since.
 */
export function applySync(
  policy: Policy,
  counts: PolicyCounts,
  window: number,
  sums: readonly [number, number],
  sent: readonly [number, number],
): void {
  const current = sums[0] - sent[0] + (counts.own.get(window) ?? 0);
  const previous = sums[1] - sent[1] + (counts.own.get(window - 1) ?? 0);
  const viewWindow = counts.view === undefined ? window : Math.max(window, counts.view[0] as number);
  if (viewWindow === window) {
    counts.view = policy.algorithm === 'fixed-window' ? [window, current] : [window, current, previous];
  } else if (policy.algorithm === 'sliding-window-counter' && viewWindow === window + 1) {
    // The window rolled while the sync was on its way: what it found is now the previous one.
    const view = counts.view as State;
    counts.view = [viewWindow, view[1] as number, current];
  }
}
