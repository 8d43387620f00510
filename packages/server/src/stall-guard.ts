import { type RateLimitStore, SluiceError, type StoreRequest } from '@sluice/core';

/**
 * Stops sending to a Redis that has stopped answering while its connection stays open (a
 * paused or frozen server, a host gone without a reset). Each call a caller gave up on after
 * the store timeout would still wait in the connection and run, charging its client, once
 * Redis resumes, though the call was answered `UNAVAILABLE` long before: a stall of a few
 * seconds would spend every busy client's quota. So once the oldest unanswered call to a hash
 * slot is older than the timeout, further calls to that slot fail at once, sent nowhere, until
 * that call is answered or fails (the connection closing fails it). Only calls sent within a
 * timeout of the stall's start can count late. Per slot, not per store: on a Cluster a master
 * that stalls stops its own slots only. Decisions the store makes in-process (its deny cache)
 * go on as before.
 */
export function guardStalls(
  store: RateLimitStore,
  timeoutMs: number,
  slotOf: (namespace: string, key: string) => number,
  clock: () => number = performance.now.bind(performance),
): RateLimitStore {
  /** Per slot, the start times of its calls not yet answered, oldest first. */
  const unanswered = new Map<number, Set<{ sentAt: number }>>();

  const stalledSince = (slot: number): number | undefined => {
    const oldest = unanswered.get(slot)?.values().next().value;
    return oldest !== undefined && clock() - oldest.sentAt > timeoutMs ? oldest.sentAt : undefined;
  };

  /** `send`'s promise, or a rejection without sending while the slot stalls. */
  const sent = <T>(slot: number, send: () => Promise<T>): Promise<T> => {
    const since = stalledSince(slot);
    if (since !== undefined) {
      const waitedMs = Math.round(clock() - since);
      return Promise.reject(
        new SluiceError(
          'ERR_SLUICE_STORE_UNAVAILABLE',
          `[sluice] Store "${store.name}" has not answered a call sent ${waitedMs} ms ago; not sending more to it until it does.`,
        ),
      );
    }
    let calls = unanswered.get(slot);
    if (calls === undefined) {
      calls = new Set();
      unanswered.set(slot, calls);
    }
    const call = { sentAt: clock() };
    calls.add(call);
    const done = (): void => {
      calls.delete(call);
      if (calls.size === 0 && unanswered.get(slot) === calls) unanswered.delete(slot);
    };
    let reply: Promise<T>;
    try {
      reply = send();
    } catch (error) {
      done();
      return Promise.reject(error);
    }
    reply.then(done, done);
    return reply;
  };

  const slotOfRequest = (request: StoreRequest): number => slotOf(request.namespace, request.key);
  const { consumeAll } = store;

  return {
    ...store,
    consume: (request) => sent(slotOfRequest(request), () => store.consume(request)),
    refund: (request) => sent(slotOfRequest(request), () => store.refund(request)),
    reset: (namespace, key, policies) => sent(slotOf(namespace, key), () => store.reset(namespace, key, policies)),
    ...(consumeAll === undefined
      ? {}
      : {
          // The store takes several requests together only when they share a slot.
          consumeAll(requests) {
            const first = requests[0];
            if (first === undefined) return consumeAll.call(store, requests);
            const slot = slotOfRequest(first);
            let declined = false;
            const replies = sent(slot, () => {
              const answer = consumeAll.call(store, requests);
              if (answer === undefined) declined = true;
              return answer ?? Promise.resolve([]);
            });
            return declined ? undefined : replies;
          },
        }),
  };
}
