import { chargeOf, decide, refundStates, type State, type StoreReply, type StoreRequest } from '@sluice/core';

/**
 * The pure reference run on its own states, which never expire: a store whose states expire
 * (lazily in memory, by PEXPIRE in Redis) must still decide exactly as this does, because an
 * expired state reads the same as a fresh one.
 */
export function referenceModel() {
  const states = new Map<string, (State | undefined)[]>();
  return {
    consume(request: StoreRequest & { now: number }): StoreReply {
      const { policies, capacities, cost, now } = request;
      const reply = decide(states.get(request.key) ?? [], policies, capacities, cost, now);
      if (reply.next !== undefined) states.set(request.key, reply.next);
      return { allowed: reply.allowed, now: reply.now, outcomes: reply.outcomes };
    },
    refund(request: StoreRequest & { now: number }): void {
      const held = states.get(request.key);
      if (held === undefined) return;
      const { policies, capacities, cost, now } = request;
      states.set(request.key, refundStates(held, policies, capacities, cost, now, chargeOf(request, now)));
    },
    reset(key: string): void {
      states.delete(key);
    },
  };
}
