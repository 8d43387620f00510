import type { EvaluateAt } from '../algorithms/algorithm.js';
import { decide, refundStates, settleConvertedWaits } from '../algorithms/index.js';
import { invalid } from '../errors.js';
import { checkOptionNames } from '../known-options.js';
import { chargeOf } from '../refund-charge.js';
import { storeKey } from '../store-key.js';
import type { Policy, PolicyOutcome, RateLimitStore, StoreReply, StoreRequest } from '../types.js';
import { costOf, nowOf, settled } from './checks.js';
import {
  type Entry,
  findSegment,
  inPlace as inPlaceImport,
  readStates,
  removeSegment,
  segmentsOf,
  writeSegment,
} from './entry.js';
import type { Layout } from './layouts.js';
import { NO_SLOT as NO_SLOT_IMPORT } from './lru.js';
import { chargeSegment } from './segment-charge.js';
import { type MemoryState, memoryAlgorithms } from './sliding-log.js';
import { fitsRow, MemoryTable } from './table.js';
import { type TakenOver, takeOver } from './take-over.js';
import { withGetters } from './with-getters.js';

export const DEFAULT_MAX_KEYS = 100_000;

// This module's own constant: optimised code reads one as its value, where it loads an imported
// binding and checks its temporal dead zone on every use (some 6 instructions each time).
const NO_SLOT = NO_SLOT_IMPORT;

export interface MemoryStoreOptions {
  /** Most client keys tracked at once; one key holds the state of every limiter for that client. @default 100000 */
  maxKeys?: number | undefined;
}

export interface MemoryStore extends RateLimitStore {
  /** Client keys tracked now; never more than `maxKeys`. */
  readonly size: number;
  /** Keys evicted so far to stay within `maxKeys` (for metrics: `@sluice/otel`). */
  readonly evictions: number;
  consumeSync(request: StoreRequest): StoreReply;
  consumeOneSync(request: StoreRequest): PolicyOutcome;
}

const noStates: readonly MemoryState[] = [];

/** What a one-policy decision on a row reuses, for states of one size (see `decideOnRow`). */
interface RowScratch {
  /** The outcome. */
  readonly into: PolicyOutcome;
  /** Where a key not held, or a peek, is decided. */
  readonly values: Float64Array;
}

const rowScratch = (size: number): RowScratch => ({
  into: { allowed: false, remaining: 0, resetAfterMs: 0, retryAfterMs: 0, delayMs: 0 },
  values: new Float64Array(size),
});

// How a policy whose state fits a row (`fitsRow`) decides on it; this module's own constant.
const inPlace = inPlaceImport;

/**
 * A consume of one policy, bound to a limiter: the client key as the caller gave it, the
 * policy's effective capacity, a cost of at least 1, and the limiter's clock reading, which
 * the limiter checked (`undefined`: the store's own). The outcome may be reused by the next call.
 */
export type BoundDecision = (key: string, capacity: number, cost: number, now: number | undefined) => PolicyOutcome;

const binders = new WeakMap<
  RateLimitStore,
  (namespace: string, policies: readonly Policy[]) => BoundDecision | undefined
>();

/**
 * `consumeSync` and `consumeOneSync` on the client key as the caller gave it, not made safe:
 * a key held as given is its own safe form, so `storeKey` does not read it (see
 * `RateLimitStore.takesKeysAsGiven`). For core's limiter alone: the store's own methods take
 * safe keys, as any store's do, so that a store wrapping it (by spreading it, or calling
 * through to it) hands them the keys it was given.
 */
export interface GivenKeyDecisions {
  consumeSync(request: StoreRequest): StoreReply;
  consumeOneSync(request: StoreRequest): PolicyOutcome;
}

const givenKeyDecisions = new WeakMap<RateLimitStore, GivenKeyDecisions>();

/**
 * The decisions on keys as given of a memory store this module made; `undefined` for any other
 * store, a store that wraps a memory store included.
 * @internal
 */
export function givenKeyDecisionsOf(store: RateLimitStore): GivenKeyDecisions | undefined {
  return givenKeyDecisions.get(store);
}

/**
 * The leanest path of a one-policy limiter over a memory store this module made: its decisions
 * bound once, at the limiter's creation, to its namespace and policy. `undefined` for any other
 * store, a store that wraps a memory store included (it decides through its own methods), and
 * for a policy the path does not take.
 * @internal
 */
export function boundDecisionOf(
  store: RateLimitStore,
  namespace: string,
  policies: readonly Policy[],
): BoundDecision | undefined {
  return binders.get(store)?.(namespace, policies);
}

const TABLE = Symbol('sluice.memory-table');
interface Tabled {
  readonly [TABLE]: MemoryTable;
}
/** `size` and `evictions`, one getter each for every memory store (see `withGetters`). */
const storeGetters = {
  size(this: Tabled) {
    return this[TABLE].index.size;
  },
  evictions(this: Tabled) {
    return this[TABLE].evictions;
  },
};

/**
 * The embedded default store: decisions run in-process on core's reference algorithms; the
 * sliding log on a mirror of its reference that appends to the log instead of copying it.
 *
 * Eviction: least recently used first, and only when `maxKeys` keys are held. A key is
 * evicted only after `maxKeys` other keys have been used since its own last use, so a client
 * that keeps sending requests is never evicted; an evicted key starts again from a fresh
 * state. Expiry is lazy: a state past its reset time reads exactly like a fresh one, and is
 * replaced by the client's next charge, dropped by a refund that brings it back to fresh, or
 * evicted. A peek keeps it: a clock that steps back behind its reset time still counts it, as
 * the reference does. No timer runs, per key or otherwise.
 *
 * @example
 * const limiter = createLimiter({ limit: 100, window: '1m', store: createMemoryStore({ maxKeys: 50_000 }) });
 */
export function createMemoryStore(options: MemoryStoreOptions = {}): MemoryStore {
  if (typeof options !== 'object' || options === null)
    invalid('ERR_SLUICE_INVALID_OPTION', 'options', options, 'an object such as `{ maxKeys: 50000 }`');
  checkOptionNames(options, ['maxKeys'], 'memory store');
  const maxKeys = options.maxKeys === undefined ? DEFAULT_MAX_KEYS : options.maxKeys;
  if (!Number.isSafeInteger(maxKeys) || maxKeys <= 0 || maxKeys > 2 ** 30)
    invalid('ERR_SLUICE_INVALID_MAX_KEYS', 'maxKeys', maxKeys, 'a whole number from 1 to 2^30');
  return memoryStoreOver(new MemoryTable(maxKeys));
}

/** A memory store over `table`, its keys, states and layouts. */
export function memoryStoreOver(table: MemoryTable): MemoryStore {
  const { index, layouts } = table;
  // What the one-policy path reuses, for a state of 2 values and of 3 (see `fitsRow`).
  const scratches = [rowScratch(2), rowScratch(3)];

  // The layout of the last request, and what it was asked for: a limiter sends the same
  // policies and namespace every time, and asking `layouts` cost a one-policy decision more
  // than the rest of finding the client's state. One that is stale (see `Layouts`) is asked for
  // again, which brings it back (as a limiter's next call must: see `Layouts`).
  let lastPolicies: readonly Policy[] | undefined;
  let lastAskedNamespace = '';
  let lastLayout: Layout | undefined;
  const layoutOf = (request: StoreRequest): Layout => {
    if (
      request.policies !== lastPolicies ||
      request.namespace !== lastAskedNamespace ||
      layouts.stale(lastLayout as Layout)
    ) {
      lastPolicies = request.policies;
      lastAskedNamespace = request.namespace;
      lastLayout = layouts.of(request.namespace, request.policies);
    }
    return lastLayout as Layout;
  };

  /**
   * Replaces what other versions left with this layout's states (none when they are all
   * fresh), and the slots it lacks.
   */
  const replace = (entry: Entry, layout: Layout, taken: TakenOver, states: readonly MemoryState[] | undefined) => {
    for (const at of taken.offsets) removeSegment(entry, at);
    if (states !== undefined) writeSegment(entry, -1, layout.id, states, layout.policies);
    if (taken.extras.length > 0) {
      writeSegment(entry, -1, layouts.of(layout.namespace, taken.extras).id, taken.extraStates, taken.extras);
    }
  };

  /**
   * A decision on the client's entry in its general form: several segments, a log, another
   * version's states, or whatever else `chargeSegment` leaves to it. Only a charge writes: a
   * peek keeps even a state past its reset time, which a clock that steps back still counts
   * (see `Algorithm`), as the reference does.
   */
  const decideOnEntry = (request: StoreRequest, key: string, layout: Layout, slot: number, now: number) => {
    const { policies, capacities, cost } = request;
    let entry = slot === NO_SLOT ? undefined : table.entryAt(slot);
    const at = entry === undefined ? -1 : findSegment(entry, layout.id);
    const taken = at < 0 && entry !== undefined ? takeOver(entry, layout, layouts, now) : undefined;
    let reply: ReturnType<typeof decide<MemoryState>>;
    if (taken !== undefined) {
      // Written only when charged: a refusal leaves the other version's states as they are.
      reply = decide(taken.states, policies, capacities, cost, now, memoryAlgorithms);
      if (reply.next !== undefined) replace(entry as Entry, layout, taken, reply.next);
      else settleConvertedWaits(reply.outcomes, taken.converted, policies, capacities, cost, now, memoryAlgorithms);
    } else {
      const states = at < 0 ? noStates : readStates(entry as Entry, at, policies);
      reply = decide(states, policies, capacities, cost, now, memoryAlgorithms);
      if (reply.next !== undefined) entry = writeSegment(entry, at, layout.id, reply.next, policies);
    }
    if (entry !== undefined) table.keep(key, slot, entry);
    return reply;
  };

  /**
   * A one-policy decision on the client's row, or on none (`NO_SLOT`) for a key not held; the
   * caller checked that a row held is of this layout. A charge is made on the row in place,
   * nothing copied in or out and nothing allocated (some 150 instructions a decision fewer
   * than a copy); a new key or a peek (cost 0) is decided on the scratch state, a new key taken
   * in only when charged. The outcome may be reused by the next call: callers read its fields
   * at once.
   */
  const decideOnRow = (
    key: string,
    slot: number,
    layout: Layout,
    evaluateAt: EvaluateAt,
    capacity: number,
    cost: number,
    now: number,
    scratch: RowScratch,
  ): PolicyOutcome => {
    // One call site each of `evaluateAt`, `readRow`, `writeRow` and `add`: the optimising
    // compiler inlines each call site on its own, and two of each overran its budget.
    const onRow = slot !== NO_SLOT && cost > 0;
    const { into, values } = scratch;
    if (!onRow && slot !== NO_SLOT) table.readRow(slot, values);
    const policy = layout.policies[0] as Policy;
    evaluateAt(
      onRow ? table.rows : values,
      onRow ? table.stateAt(slot) : 0,
      slot === NO_SLOT,
      policy,
      capacity,
      cost,
      now,
      into,
    );
    if (slot === NO_SLOT && into.allowed && cost > 0) table.writeRow(table.add(key), layout.id, values);
    return into;
  };

  /**
   * A one-policy request: the limiter's fast path. A client whose one state is this layout's
   * (or who has none) is decided on its row (`decideOnRow`); any other as `decideOnEntry` does.
   */
  const decideOne = (request: StoreRequest, key: string, slot: number, now: number): PolicyOutcome => {
    const { policies, cost } = request;
    const layout = layoutOf(request);
    if (!fitsRow(layout) || (slot !== NO_SLOT && !table.holds(slot, layout.id))) {
      return decideOnEntry(request, key, layout, slot, now).outcomes[0] as PolicyOutcome;
    }
    const capacity = request.capacities[0] as number;
    return decideOnRow(
      key,
      slot,
      layout,
      inPlace(policies[0] as Policy),
      capacity,
      cost,
      now,
      scratches[layout.length - 2] as RowScratch,
    );
  };

  /**
   * A one-policy limiter's decisions, bound to its namespace and policy once (see
   * `boundDecisionOf`): `decideOne` for a consume, without a request to fill and read back, a
   * layout to look up or an algorithm to find on each call. Undefined for a policy whose state
   * takes no row (a log).
   */
  const bindOne = (namespace: string, policies: readonly Policy[]): BoundDecision | undefined => {
    if (policies.length !== 1) return undefined;
    const policy = policies[0] as Policy;
    // A field, not a `let` the closure shares: each read of such a variable is checked for its
    // temporal dead zone and its type, where a field's is known (some 16 instructions a decision).
    const held = { layout: layouts.of(namespace, policies) };
    if (!fitsRow(held.layout)) return undefined;
    const evaluateAt = inPlace(policy);
    const scratch = rowScratch(held.layout.length);
    const { into } = scratch;
    return (given, capacity, cost, at) => {
      // Not checked again (`nowOf`): on every decision, a call through an import cost some 20 instructions.
      const now = at ?? Date.now();
      if (layouts.stale(held.layout)) held.layout = layouts.of(namespace, policies);
      let key = given;
      // Held as given, the key is its own safe form: `storeKey` is not run.
      let slot = index.getAsGiven(given);
      if (slot === NO_SLOT) {
        key = storeKey(given);
        if (key !== given) slot = index.get(key);
        // Decided here, so that a key held reaches its row on one path: the optimising compiler
        // then reads `table.rows` once, not again where two paths meet (some 20 instructions a
        // decision).
        if (slot === NO_SLOT) return decideOnRow(key, slot, held.layout, evaluateAt, capacity, cost, now, scratch);
      }
      if (!table.holds(slot, held.layout.id)) {
        const request = { namespace, key, policies, capacities: [capacity], cost, now };
        return decideOnEntry(request, key, held.layout, slot, now).outcomes[0] as PolicyOutcome;
      }
      // A consume (cost ≥ 1) of a key held, charged on its row, is the usual decision; written
      // out here rather than left to `decideOnRow`, whose other cases would take the optimising
      // compiler's inlining budget from it.
      evaluateAt(table.rows, table.stateAt(slot), false, policy, capacity, cost, now, into);
      return into;
    };
  };

  /** A decision on `key`, a safe key (`storeKey`), held at `slot` or not (`NO_SLOT`). */
  const decideFor = (request: StoreRequest, key: string, slot: number, now: number): StoreReply => {
    if (request.policies.length === 1) {
      const evaluation = decideOne(request, key, slot, now);
      return { allowed: evaluation.allowed, now, outcomes: [outcomeOf(evaluation)] };
    }
    const layout = layoutOf(request);
    const charged = chargeSegment(table, request, key, layout, slot, now);
    if (charged !== undefined) return charged;
    const { allowed, outcomes } = decideOnEntry(request, key, layout, slot, now);
    return { allowed, now, outcomes };
  };

  // The safe key `slotOfGiven` settled on: a field, where a second value returned would be an
  // object made on every call.
  const found = { key: '' };
  /** The slot of a client key as the caller gave it, or `NO_SLOT`; its safe form left in `found`. */
  const slotOfGiven = (given: string): number => {
    // Held as given, the key is its own safe form: `storeKey` is not run.
    const slot = index.getAsGiven(given);
    found.key = given;
    if (slot !== NO_SLOT) return slot;
    const key = storeKey(given);
    found.key = key;
    return key === given ? NO_SLOT : index.get(key);
  };

  // The store's own methods check the cost a caller gives; the limiter's paths below (keys as
  // given, `bindOne`) are handed costs it checked.
  const consumeSync = (request: StoreRequest): StoreReply => {
    const now = nowOf(request.now);
    costOf(request.cost);
    return decideFor(request, request.key, index.get(request.key), now);
  };

  const refundSync = (request: StoreRequest): void => {
    const now = nowOf(request.now);
    costOf(request.cost);
    const charge = chargeOf(request, now);
    const layout = layouts.of(request.namespace, request.policies);
    const { policies, capacities } = request;
    const slot = index.get(request.key);
    if (slot === NO_SLOT) return;
    const entry = table.entryAt(slot);
    const at = findSegment(entry, layout.id);
    const taken = at < 0 ? takeOver(entry, layout, layouts, now) : undefined;
    if (at >= 0 || taken !== undefined) {
      const current = taken === undefined ? readStates(entry, at, policies) : taken.states;
      const refunded = refundStates(current, policies, capacities, request.cost, now, charge, memoryAlgorithms);
      // A client back to fresh is dropped (every entry `undefined`), not kept as of now.
      const back = refunded.every((state) => state === undefined);
      const states = refunded.map((s, i) => s ?? fresh(policies[i] as Policy, capacities[i] as number));
      if (taken !== undefined) replace(entry, layout, taken, back ? undefined : states);
      else if (back) removeSegment(entry, at);
      else writeSegment(entry, at, layout.id, states, policies);
    }
    table.keep(request.key, slot, entry);
  };

  const onGivenKeys: GivenKeyDecisions = {
    consumeSync(request) {
      const now = nowOf(request.now);
      const slot = slotOfGiven(request.key);
      return decideFor(request, found.key, slot, now);
    },
    consumeOneSync(request) {
      const now = nowOf(request.now);
      const slot = slotOfGiven(request.key);
      return decideOne(request, found.key, slot, now);
    },
  };

  const methods: Omit<MemoryStore, 'size' | 'evictions'> & Tabled = {
    name: 'memory',
    local: true,
    [TABLE]: table,
    // A store wrapped by spreading it (`{ ...store, consume }`) keeps its table, and so the
    // namespaces its limiters claimed: two limiters cannot count into one table's states by
    // accident through two objects.
    backing: table,
    consumeSync,
    consumeOneSync(request) {
      const now = nowOf(request.now);
      costOf(request.cost);
      return decideOne(request, request.key, index.get(request.key), now);
    },
    consume: (request) => settled(() => consumeSync(request)),

    refund: (request) => settled(() => refundSync(request)),

    reset(namespace, key) {
      const slot = index.peek(key);
      if (slot === NO_SLOT) return Promise.resolve();
      const entry = table.entryAt(slot);
      // Every version's states under the namespace, and any a forgotten layout left.
      for (const [at, id] of segmentsOf(entry).reverse()) {
        const layout = layouts.byId(id);
        if (layout === undefined || layout.namespace === namespace) removeSegment(entry, at);
      }
      table.keep(key, slot, entry);
      return Promise.resolve();
    },
  };
  const store: MemoryStore = withGetters(methods, storeGetters);
  binders.set(store, bindOne);
  givenKeyDecisions.set(store, onGivenKeys);
  return store;
}

/**
 * A state beside others that reads as fresh at any time: one as of time 0, where the reference
 * keeps none (`undefined`). One as of now read as spent once a clock stepped back.
 */
const fresh = (policy: Policy, capacity: number): MemoryState =>
  memoryAlgorithms[policy.algorithm].evaluate(undefined, policy, capacity, 0, 0).next;

/** The outcome fields alone: a reply carries no algorithm's private state. */
const outcomeOf = ({ allowed, remaining, resetAfterMs, retryAfterMs, delayMs }: PolicyOutcome): PolicyOutcome => ({
  allowed,
  remaining,
  resetAfterMs,
  retryAfterMs,
  delayMs,
});
