import {
  algorithms,
  chargeOf,
  decide,
  type Policy,
  type PolicyOutcome,
  type State,
  type StoreReply,
  type StoreRequest,
} from '@sluice/core';

/**
 * What one process knows of one policy of one client in local-first mode: the algorithm's
 * state as of the last sync plus this process's own charges since (`view`), and this
 * process's cumulative count of the latest window it charged (`current`, for `window`) and of
 * the window before (`previous`), which the sync writes to Redis while some process still reads
 * them (`firstKeptWindow`). Older windows no longer count for any algorithm local-first runs.
 */
export interface PolicyCounts {
  view: State | undefined;
  window: number;
  current: number;
  previous: number;
}

/** One client of one policy set (every limiter with those policies and namespace), as this process sees it. */
export interface ClientCounts {
  readonly namespace: string;
  readonly key: string;
  readonly policies: readonly Policy[];
  /** This process's number for the policy set: with `incarnation`, its field in the window keys. */
  readonly policySet: number;
  /** This process's number for this client's counts: a client forgotten and met again counts anew. */
  readonly incarnation: number;
  /** The hash slot of the client's keys (0 off a cluster): Redis is reached or not per slot. */
  readonly slot: number;
  readonly counts: PolicyCounts[];
  /** The latest `now` a decision used: syncs pick their windows by it (an injected clock works). */
  lastNow: number;
  // The client table's bookkeeping (client-table.ts).
  /** Decided on since the last sync: on the table's touched list, written and read at the next one. */
  touched: boolean;
  /** The sync round it was last decided or read in: idle through a whole round, it is read again before it decides. */
  round: number;
  /** Forgotten by the table: whatever still holds it must neither write it nor keep it. */
  gone: boolean;
  /** Resets of it under way: while any is, no call writes its totals, which would undo its deletion. */
  resetting: number;
  /** Its ending while its counts are all written (`endings`); undefined otherwise. */
  ending: Ending | undefined;
  /** Its neighbours on the one list it is on: the touched list (`next` only) or its ending. */
  prev: ClientCounts | undefined;
  next: ClientCounts | undefined;
}

/** The written clients whose windows are all over by `endsAt`, least recently used first. */
export interface Ending {
  readonly endsAt: number;
  first: ClientCounts | undefined;
  last: ClientCounts | undefined;
}

export function newClientCounts(
  request: StoreRequest,
  now: number,
  policySet = 0,
  slot = 0,
  incarnation = 0,
): ClientCounts {
  return {
    namespace: request.namespace,
    key: request.key,
    policies: request.policies,
    policySet,
    incarnation,
    slot,
    counts: request.policies.map(() => ({ view: undefined, window: -1, current: 0, previous: 0 })),
    lastNow: now,
    touched: false,
    // Before any round: read before it decides.
    round: -2,
    gone: false,
    resetting: 0,
    ending: undefined,
    prev: undefined,
    next: undefined,
  };
}

/** This process's count of `window`. */
export function ownCount(counts: PolicyCounts, window: number): number {
  if (window === counts.window) return counts.current;
  return window === counts.window - 1 ? counts.previous : 0;
}

/**
 * Decides from local counts with core's `decide`, so the reply is the one any store gives on
 * that state; `share` scales the capacities while Redis is out of reach.
 */
export function decideLocally(client: ClientCounts, request: StoreRequest, now: number, share: number): StoreReply {
  const { policies, capacities, cost } = request;
  const scaled = share === 1 ? capacities : capacities.map((capacity) => scaledCapacity(capacity, share));
  const views = client.counts.map((counts) => counts.view);
  const { allowed, outcomes, next } = decide(views, policies, scaled, cost, now);
  if (next !== undefined) {
    for (let i = 0; i < policies.length; i++) {
      const counts = client.counts[i] as PolicyCounts;
      counts.view = next[i];
      charge(counts, viewedWindow(counts), cost);
    }
  }
  seen(client, now);
  return { allowed, now, outcomes };
}

/** A reply `decideOneLocally` fills in place: read at once, before the next decision. */
export interface ReusedReply {
  allowed: boolean;
  now: number;
  readonly outcomes: [PolicyOutcome];
}

export function reusedReply(): ReusedReply {
  const evaluation: PolicyOutcome = { allowed: false, remaining: 0, resetAfterMs: 0, retryAfterMs: 0, delayMs: 0 };
  return { allowed: false, now: 0, outcomes: [evaluation] };
}

/**
 * `decideLocally` for a client of one policy, deciding as it does, into `into`: a client with
 * a view is charged with nothing allocated, on its view in place (`evaluateAt`, which both
 * algorithms local-first decides have); a peek (cost 0) decides on a copy.
 */
export function decideOneLocally(
  client: ClientCounts,
  request: StoreRequest,
  now: number,
  share: number,
  into: ReusedReply,
): StoreReply {
  const policy = request.policies[0] as Policy;
  const counts = client.counts[0] as PolicyCounts;
  const capacity = scaledCapacity(request.capacities[0] as number, share);
  const { cost } = request;
  const evaluation = into.outcomes[0];
  const algorithm = algorithms[policy.algorithm];
  const view = counts.view as number[] | undefined;
  if (view === undefined || algorithm.evaluateAt === undefined || cost === 0) {
    const fresh = algorithm.evaluate(view, policy, capacity, cost, now);
    evaluation.allowed = fresh.allowed;
    evaluation.remaining = fresh.remaining;
    evaluation.resetAfterMs = fresh.resetAfterMs;
    evaluation.retryAfterMs = fresh.retryAfterMs;
    evaluation.delayMs = fresh.delayMs;
    if (fresh.allowed && cost > 0) counts.view = fresh.next;
  } else {
    algorithm.evaluateAt(view, 0, false, policy, capacity, cost, now, evaluation);
  }
  if (evaluation.allowed && cost > 0) charge(counts, viewedWindow(counts), cost);
  seen(client, now);
  into.allowed = evaluation.allowed;
  into.now = now;
  return into;
}

const scaledCapacity = (capacity: number, share: number): number =>
  share === 1 ? capacity : Math.floor(capacity * share);

function seen(client: ClientCounts, now: number): void {
  if (now > client.lastNow) client.lastNow = now;
}

/**
 * Gives units back to this process's count of the window the charge was made in (never below
 * zero), while some process still reads that window: the current one, or for the sliding window
 * counter the one before, which its estimate still weighs. The view loses the same units.
 */
export function refundLocally(client: ClientCounts, request: StoreRequest, now: number): void {
  const chargedAt = chargeOf(request, now).at;
  for (let i = 0; i < client.policies.length; i++) {
    const policy = client.policies[i] as Policy;
    const counts = client.counts[i] as PolicyCounts;
    const window = windowOf(policy, chargedAt);
    if (window < firstKeptWindow(policy, now)) continue;
    const units = Math.min(request.cost, ownCount(counts, window));
    if (units > 0) charge(counts, window, -units);
    counts.view = takenFromView(counts.view, window, units);
  }
}

/** A view (`[window, count]`, or `[window, current, previous]`) with `units` fewer in `window`. */
function takenFromView(view: State | undefined, window: number, units: number): State | undefined {
  if (view === undefined || units === 0) return view;
  const at = view[0] === window ? 1 : view[0] === window + 1 && view.length === 3 ? 2 : 0;
  if (at === 0) return view;
  const taken = view.slice();
  taken[at] = Math.max(0, (view[at] as number) - units);
  return taken;
}

export const windowOf = (policy: Policy, now: number): number => Math.floor(now / policy.windowMs);

/**
 * The window the view was written in (-1 before there is one), where admissions count: `now`'s
 * unless the clock stepped back, when the algorithm decides as of the later window the view was
 * written in (`clockLag`), and the units must count there too.
 */
const viewedWindow = (counts: PolicyCounts): number => (counts.view === undefined ? -1 : (counts.view[0] as number));

/**
 * The oldest window any process still reads at `now`: the current one, and for the sliding
 * window counter the one before, which it weighs. Older ones are neither kept nor written.
 */
export const firstKeptWindow = (policy: Policy, now: number): number =>
  windowOf(policy, now) - (policy.algorithm === 'sliding-window-counter' ? 1 : 0);

/**
 * The time from which no window this process counted or decided in is read any more (its
 * totals included): `firstKeptWindow` has passed every one of them.
 */
export function overAt(client: ClientCounts): number {
  let at = 0;
  for (let i = 0; i < client.policies.length; i++) {
    const policy = client.policies[i] as Policy;
    const counts = client.counts[i] as PolicyCounts;
    const last = Math.max(counts.window, viewedWindow(counts));
    const read = policy.algorithm === 'sliding-window-counter' ? 2 : 1;
    at = Math.max(at, (last + read) * policy.windowMs);
  }
  return at;
}

/** Adds `units` to this process's count of `window`; a window older than the one before the latest is not kept. */
function charge(counts: PolicyCounts, window: number, units: number): void {
  if (window === counts.window) counts.current += units;
  else if (window === counts.window - 1) counts.previous += units;
  else if (window > counts.window) {
    counts.previous = window === counts.window + 1 ? counts.current : 0;
    counts.current = units;
    counts.window = window;
  }
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
  const current = sums[0] - sent[0] + ownCount(counts, window);
  const previous = sums[1] - sent[1] + ownCount(counts, window - 1);
  const viewWindow = Math.max(window, viewedWindow(counts));
  if (viewWindow === window) {
    counts.view = policy.algorithm === 'fixed-window' ? [window, current] : [window, current, previous];
  } else if (policy.algorithm === 'sliding-window-counter' && viewWindow === window + 1) {
    // The window rolled while the sync was on its way: what it found is now the previous one.
    const view = counts.view as State;
    counts.view = [viewWindow, view[1] as number, current];
  }
}
