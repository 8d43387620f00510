import { SluiceError } from '@sluice/core';
import type { Cluster, Redis } from 'ioredis';

/** A connection the user owns: sluice registers its scripts on it and never closes it. */
export type RedisClient = Redis | Cluster;

/**
 * Accepts anything shaped like an ioredis `Redis` or `Cluster` (duck-typed, so a second copy
 * of ioredis in the app still works). A client `keyPrefix` goes in front of every key ioredis
 * sends, so a brace in it would move the `{hash tag}` and split one decision across slots.
 */
export function checkClient(client: unknown): RedisClient {
  const candidate = client as Partial<Redis> | null | undefined;
  if (
    typeof candidate !== 'object' ||
    candidate === null ||
    typeof candidate.defineCommand !== 'function' ||
    typeof candidate.del !== 'function' ||
    typeof candidate.status !== 'string'
  ) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_CLIENT',
      `[sluice] Option \`client\` must be an ioredis Redis or Cluster instance; received ${kind(client)}.`,
    );
  }
  const keyPrefix = (candidate.options as { keyPrefix?: unknown } | undefined)?.keyPrefix;
  if (typeof keyPrefix === 'string' && /[{}]/.test(keyPrefix)) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_CLIENT',
      `[sluice] Option \`client\` has keyPrefix ${JSON.stringify(keyPrefix)}; a client keyPrefix must not hold \`{\` or \`}\`, which would change the hash tag of sluice keys.`,
    );
  }
  return client as RedisClient;
}

/**
 * Decisions are sent only on a ready connection. ioredis would otherwise queue them while it
 * reconnects and send them later: each would wait the limiter's whole timeout, and then be
 * counted in Redis after the fail policy had already decided the request. A lazy client is
 * connected by its first call, as any command would connect it.
 */
export function notReady(client: RedisClient): SluiceError | undefined {
  if (client.status === 'ready') return undefined;
  if (client.status === 'wait') client.connect().catch(() => {});
  return unavailableError(client.status);
}

const seenReady = new WeakSet<RedisClient>();
/** Clients with a listener waiting for their first 'ready': one each, however many stores. */
const watched = new WeakSet<RedisClient>();
const openings = new WeakMap<RedisClient, Promise<void>>();
const firstConnectStatuses = new Set(['wait', 'connecting', 'connect']);

/**
 * Remembers from now on whether the client has ever been ready. One listener per client: a
 * store per route over one client not yet connected added one each (ioredis warned past ten,
 * and a Redis down at start-up kept them all).
 */
export function watchReady(client: RedisClient): void {
  if (client.status === 'ready') seenReady.add(client);
  else if (!watched.has(client)) {
    watched.add(client);
    client.once('ready', () => seenReady.add(client));
  }
}

/**
 * While a client opens its first connection, decisions wait for it (the limiter's
 * `storeTimeoutMs` bounds the wait): failing them fast would let every request of a fresh
 * app through. `undefined` when the client is not opening for the first time, which is an
 * outage: those decisions fail fast. The wait ends with the connection, or with an error as
 * soon as the attempt fails.
 */
export function firstConnection(client: RedisClient): Promise<void> | undefined {
  if (seenReady.has(client) || !firstConnectStatuses.has(client.status)) return undefined;
  let opening = openings.get(client);
  if (opening === undefined) {
    opening = new Promise<void>((resolve, reject) => {
      const settle = (error?: SluiceError) => {
        client.off('ready', ready);
        client.off('close', failed);
        client.off('end', failed);
        openings.delete(client);
        if (error) reject(error);
        else resolve();
      };
      const ready = () => settle();
      const failed = () => settle(unavailableError(client.status));
      client.once('ready', ready);
      client.once('close', failed);
      client.once('end', failed);
    });
    // Each waiting decision handles the rejection; this handles it when none is left waiting.
    opening.catch(() => {});
    openings.set(client, opening);
  }
  return opening;
}

/**
 * What a store call does before it sends: `undefined` on a ready client, the first connection
 * to wait for while the client opens it, and the unavailable error thrown during an outage.
 */
export function untilReady(client: RedisClient): Promise<void> | undefined {
  const unavailable = notReady(client);
  if (unavailable === undefined) return undefined;
  const opening = firstConnection(client);
  if (opening === undefined) throw unavailable;
  return opening;
}

/**
 * One error per client status, made once: during an outage every request gets one, and a
 * fresh error (with its stack) for each would cost more than the decision it replaces.
 */
const unavailableErrors = new Map<string, SluiceError>();
function unavailableError(status: string): SluiceError {
  let error = unavailableErrors.get(status);
  if (error === undefined) {
    error = new SluiceError(
      'ERR_SLUICE_STORE_UNAVAILABLE',
      `[sluice] Redis store: the client is ${status}, not ready to send commands.`,
    );
    unavailableErrors.set(status, error);
  }
  return error;
}

/**
 * A standalone ioredis client re-sends the commands it had in flight when a connection drops
 * and comes back, unless `maxRetriesPerRequest` is 0. A decision Redis had already run would
 * then run twice. Warned, not refused: `new Redis()` with its defaults is what most apps pass.
 */
export function resendsInFlight(client: RedisClient): boolean {
  const options = client.options as { maxRetriesPerRequest?: number | null } | undefined;
  return !('nodes' in client) && options?.maxRetriesPerRequest !== 0;
}

/**
 * A Cluster client re-sends a call whose node connection closed after `retryDelayOnFailover`
 * (100 ms by default), so a decision the node had run can run again on the next one. It also
 * re-sends a call refused with TRYAGAIN (its clients' keys split by a slot migrating) after
 * `retryDelayOnTryAgain` (100 ms by default), and one refused with CLUSTERDOWN (while the
 * cluster has marked a master failed and no replica has taken over yet, every master refuses
 * calls) after `retryDelayOnClusterDown` (100 ms by default): past the store's timeout, so a
 * request the fail policy answered is charged all the same. Only 0 turns each off (at 0 ioredis
 * tries a TRYAGAIN again at once, up to `maxRedirections` times, and fails a CLUSTERDOWN call).
 */
export function clusterResendsLate(client: RedisClient): boolean {
  const options = client.options as
    | { retryDelayOnFailover?: number; retryDelayOnTryAgain?: number; retryDelayOnClusterDown?: number }
    | undefined;
  return (
    'nodes' in client &&
    (options?.retryDelayOnFailover !== 0 ||
      options?.retryDelayOnTryAgain !== 0 ||
      options?.retryDelayOnClusterDown !== 0)
  );
}

/**
 * A Cluster client that pipelines automatically follows a MOVED or ASK redirect only when
 * every call of a node's pipeline got the same one: the store's calls go one per hash slot,
 * so in a reshard or a planned failover a call redirected beside others answered fails,
 * though it never ran.
 */
export function clusterPipelinesAutomatically(client: RedisClient): boolean {
  const options = client.options as { enableAutoPipelining?: boolean } | undefined;
  return 'nodes' in client && options?.enableAutoPipelining === true;
}

/**
 * A Cluster client opens a master's connection on the first call to it, and with
 * `enableOfflineQueue: false` fails every call sent while that connection opens: the first
 * decisions after start-up, and after a master's reconnect, get the fail policy (28 of 50 at
 * start-up on three masters). The store needs no offline queue: it fails calls at once
 * itself while the client is not ready.
 */
export function clusterFailsWhileNodesOpen(client: RedisClient): boolean {
  const options = client.options as { enableOfflineQueue?: boolean } | undefined;
  return 'nodes' in client && options?.enableOfflineQueue === false;
}

function kind(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'object') return 'an object without defineCommand, del and status';
  return typeof value;
}
