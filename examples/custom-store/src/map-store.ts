import { decide, type Policy, type RateLimitStore, refundStates, type State, type StoreRequest } from '@sluice/core';

interface Slot {
  state: State;
  /** When the state is back to fresh and can be forgotten (epoch ms). */
  expiresAt: number;
}

/**
 * A store on a plain `Map`: the smallest complete implementation of the `RateLimitStore`
 * contract. Every call reads and writes in one synchronous stretch, so each decision is atomic
 * within the process; a store on a remote backend needs the same guarantee from it (a
 * transaction, a compare-and-set loop, or a script, as the Redis store's Lua).
 *
 * The algorithms are core's reference (`decide`, `refundStates`): the store only keeps states.
 */
export function createMapStore(): RateLimitStore & { readonly size: number } {
  const slots = new Map<string, Slot>();
  // Core has made `namespace` and `key` safe (no `|` inside them can collide); policy ids are
  // safe characters too.
  const slotKey = (namespace: string, key: string, policy: Policy) => `${namespace}|${key}|${policy.id}`;

  const read = (request: StoreRequest, now: number): (State | undefined)[] =>
    request.policies.map((policy) => {
      const slot = slots.get(slotKey(request.namespace, request.key, policy));
      return slot === undefined || slot.expiresAt <= now ? undefined : slot.state;
    });

  /** Keeps each state until its policy's quota is fully restored (`resetAfterMs`), then lets it go. */
  const write = (request: StoreRequest, states: readonly (State | undefined)[], now: number): void => {
    const { outcomes } = decide(states, request.policies, request.capacities, 0, now);
    request.policies.forEach((policy, i) => {
      const key = slotKey(request.namespace, request.key, policy);
      const state = states[i];
      const resetAfterMs = outcomes[i]?.resetAfterMs ?? 0;
      if (state === undefined || resetAfterMs === 0) slots.delete(key);
      else slots.set(key, { state, expiresAt: now + resetAfterMs });
    });
  };

  return {
    name: 'map',
    get size() {
      return slots.size;
    },
    async consume(request) {
      // `now` is the limiter's clock when it has one (tests); else the store's own.
      const now = request.now ?? Date.now();
      const reply = decide(read(request, now), request.policies, request.capacities, request.cost, now);
      // All or nothing: new states come back only when every policy allowed and cost > 0.
      if (reply.next !== undefined) write(request, reply.next, now);
      return { allowed: reply.allowed, now, outcomes: reply.outcomes };
    },
    async refund(request) {
      const now = request.now ?? Date.now();
      // `undefined` entries are fresh: nothing was charged there, or the window has moved on.
      write(request, refundStates(read(request, now), request.policies, request.capacities, request.cost, now), now);
    },
    async reset(namespace, key, policies) {
      for (const policy of policies) slots.delete(slotKey(namespace, key, policy));
    },
  };
}
