import {
  type ConvertedState,
  chargeOf,
  convertStateWithReset,
  decide,
  type Policy,
  type RateLimitStore,
  refundStates,
  type State,
  type StoreRequest,
  settleConvertedWaits,
} from '@sluice/core';

/** A state as read, and for one converted from another version's, what it was read from. */
interface Read {
  state: State | undefined;
  converted: ConvertedState | undefined;
}

const notHeld: Read = { state: undefined, converted: undefined };

interface Entry {
  state: State;
  /** The version of the policy that wrote the state, with the figures `convertState` reads. */
  writtenBy: Policy;
  /** When the state is back to fresh and can be forgotten (epoch ms). */
  expiresAt: number;
}

/**
 * A store on a plain `Map`: the smallest complete implementation of the `RateLimitStore`
 * contract. Every call reads and writes in one synchronous stretch, so each decision is atomic
 * within the process; a store on a remote backend needs the same guarantee from it (a
 * transaction, a compare-and-set loop, or a script, as the Redis store's Lua).
 *
 * The algorithms are core's reference (`decide`, `refundStates`, `convertState`): the store
 * only keeps states.
 */
export function createMapStore(): RateLimitStore & { readonly size: number } {
  const entries = new Map<string, Entry>();
  // State is kept per policy `slot`, which stays the same when a limit, window or algorithm
  // changes (the policy's `id` does not), so a new version of a limiter finds its clients'
  // state. Core has made `namespace` and `key` safe, and slots are safe characters too, so no
  // `|` inside them can collide.
  const entryKey = (namespace: string, key: string, policy: Policy) => `${namespace}|${key}|${policy.slot}`;

  /**
   * A policy's state as this version reads it, and for a state another version wrote, what it
   * was converted from: the waits of a refusal depend on it.
   */
  const readOne = (request: StoreRequest, policy: Policy, now: number): Read => {
    const entry = entries.get(entryKey(request.namespace, request.key, policy));
    if (entry === undefined) return notHeld;
    // Its own version's state, even past its reset: the algorithm reads it as fresh now, and a
    // clock that steps back still finds what it counted.
    if (entry.writtenBy.version === policy.version) return { state: entry.state, converted: undefined };
    if (entry.expiresAt <= now) return notHeld;
    // Another version wrote it: what it spent carries over, so the change grants no fresh quota.
    const converted = convertStateWithReset(entry.state, entry.writtenBy, policy, now);
    return converted === undefined ? notHeld : { state: converted.state, converted };
  };
  const read = (request: StoreRequest, now: number) => request.policies.map((policy) => readOne(request, policy, now));

  /**
   * Writes the client's states; an `undefined` one is fresh, and is let go (`refundStates` gives
   * every one `undefined` once a refund restores them all). One whose own quota is restored
   * stays beside one that still counts, as the memory store keeps it: a clock that steps back
   * still finds what it counted. (A client that never comes back stays in the map: a store for
   * production bounds its keys, as the memory store does, or lets its backend expire them.)
   */
  const write = (request: StoreRequest, states: readonly (State | undefined)[], now: number): void => {
    const { outcomes } = decide(states, request.policies, request.capacities, 0, now);
    request.policies.forEach((policy, i) => {
      const key = entryKey(request.namespace, request.key, policy);
      const state = states[i];
      const resetAfterMs = outcomes[i]?.resetAfterMs ?? 0;
      if (state === undefined) entries.delete(key);
      else entries.set(key, { state, writtenBy: policy, expiresAt: now + resetAfterMs });
    });
  };

  return {
    name: 'map',
    get size() {
      return entries.size;
    },
    async consume(request) {
      // `now` is the limiter's clock when it has one (tests); else the store's own.
      const now = request.now ?? Date.now();
      const reads = read(request, now);
      const reply = decide(
        reads.map((r) => r.state),
        request.policies,
        request.capacities,
        request.cost,
        now,
      );
      // All or nothing: new states come back only when every policy allowed and cost > 0. A
      // refusal writes nothing, so another version's state stays as that version left it, and
      // the waits follow it.
      if (reply.next !== undefined) write(request, reply.next, now);
      else {
        const converted = reads.map((r) => r.converted);
        settleConvertedWaits(reply.outcomes, converted, request.policies, request.capacities, request.cost, now);
      }
      return { allowed: reply.allowed, now, outcomes: reply.outcomes };
    },
    async refund(request) {
      const now = request.now ?? Date.now();
      // `undefined` entries are fresh: nothing was charged there, or the window has moved on.
      const states = read(request, now).map((r) => r.state);
      // Only what the charge still holds: `chargeAgeMs` and `chargeSpanMs` say when it was made.
      const charge = chargeOf(request, now);
      write(request, refundStates(states, request.policies, request.capacities, request.cost, now, charge), now);
    },
    async reset(namespace, key, policies) {
      for (const policy of policies) entries.delete(entryKey(namespace, key, policy));
    },
  };
}
