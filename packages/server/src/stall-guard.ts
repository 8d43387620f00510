import { type RateLimitStore, SluiceError, type StoreRequest } from '@sluice/core';

/** How often a stalled connection is sent one call, to look whether Redis answers again. */
const LOOK_EVERY_MS = 1000;

/**
 * Stops sending to a Redis that has stopped answering while its connection stays open (a
 * paused or frozen server, a host gone without a reset). Each call a caller gave up on after
 * the store timeout would still wait in the connection and run, charging its client, once
 * Redis resumes, though the call was answered `UNAVAILABLE` long before: a stall of a few
 * seconds would spend every busy client's quota. So once the oldest unanswered call on a
 * connection is older than the timeout, further calls on it fail at once, sent nowhere, but
 * for one a second (or two timeouts, if longer), which looks whether Redis answers again. Once
 * a call is answered (or fails: the connection closing fails it), the calls sent before it stop
 * counting as unanswered: Redis answers a connection's calls in order, so one left over was
 * lost, and must not stop the connection for good. Only the calls of the stall's first
 * timeout, and one a second after, can count late. Per connection, not per store: on a
 * Cluster a master that stalls stops its own slots only, and all of them at once.
 * `connectionOf` names the connection a call travels on. Decisions the store makes in-process
 * (its deny cache) go on as before.
 */
export function guardStalls(
  store: RateLimitStore,
  timeoutMs: number,
  connectionOf: (namespace: string, key: string) => string,
): RateLimitStore {
  const clock = performance.now.bind(performance);
  const lookEveryMs = Math.max(LOOK_EVERY_MS, 2 * timeoutMs);
  /** Per connection, its calls not yet answered, oldest first, and when the last was sent. */
  const connections = new Map<string, { calls: Set<{ sentAt: number }>; lastSentAt: number }>();

  /** When the connection's oldest unanswered call was sent, if longer ago than the timeout, unless it is time for a look. */
  const stalledSince = (connection: string): number | undefined => {
    const state = connections.get(connection);
    const oldest = state?.calls.values().next().value;
    if (state === undefined || oldest === undefined) return undefined;
    const now = clock();
    return now - oldest.sentAt > timeoutMs && now - state.lastSentAt < lookEveryMs ? oldest.sentAt : undefined;
  };

  /** A rejection, sent nowhere, for a call on a connection that stalls; `undefined` to send the call. */
  const refusal = (connection: string): Promise<never> | undefined => {
    const since = stalledSince(connection);
    if (since === undefined) return undefined;
    const waitedMs = Math.round(clock() - since);
    return Promise.reject(
      new SluiceError(
        'ERR_SLUICE_STORE_UNAVAILABLE',
        `[sluice] Store "${store.name}" has not answered a call sent ${waitedMs} ms ago; not sending more to it until it does.`,
      ),
    );
  };

  /** `reply`, a call just sent on `connection`, counted as unanswered until it settles. */
  const watched = <T>(connection: string, reply: Promise<T>): Promise<T> => {
    let state = connections.get(connection);
    if (state === undefined) {
      state = { calls: new Set(), lastSentAt: 0 };
      connections.set(connection, state);
    }
    const { calls } = state;
    const call = { sentAt: clock() };
    state.lastSentAt = call.sentAt;
    calls.add(call);
    const done = (): void => {
      if (!calls.has(call)) return;
      // This call and every one sent before it.
      for (const earlier of calls) {
        calls.delete(earlier);
        if (earlier === call) break;
      }
      if (calls.size === 0 && connections.get(connection) === state) connections.delete(connection);
    };
    reply.then(done, done);
    return reply;
  };

  const sent = <T>(connection: string, send: () => Promise<T>): Promise<T> =>
    refusal(connection) ?? watched(connection, send());

  const connectionOfRequest = (request: StoreRequest): string => connectionOf(request.namespace, request.key);
  const { consumeAll } = store;

  return {
    ...store,
    consume: (request) => sent(connectionOfRequest(request), () => store.consume(request)),
    refund: (request) => sent(connectionOfRequest(request), () => store.refund(request)),
    reset: (namespace, key, policies) =>
      sent(connectionOf(namespace, key), () => store.reset(namespace, key, policies)),
    ...(consumeAll === undefined
      ? {}
      : {
          // The store takes several requests together only when they share a slot.
          consumeAll(requests) {
            const first = requests[0];
            if (first === undefined) return consumeAll.call(store, requests);
            const connection = connectionOfRequest(first);
            const stalled = refusal(connection);
            if (stalled !== undefined) return stalled;
            const replies = consumeAll.call(store, requests);
            return replies && watched(connection, replies);
          },
        }),
  };
}
