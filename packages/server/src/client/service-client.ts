import { type Client, connectivityState, makeGenericClientConstructor, type ServiceError, status } from '@grpc/grpc-js';
import { type RateLimitStore, SluiceError, type StoreReply, type StoreRequest } from '@sluice/core';
import { rateLimitService } from '../proto.js';
import { REQUEST_LIMITS } from '../request-checks.js';
import { UINT32_MAX } from '../wire-types.js';
import { checkClientOptions, type ServiceClientOptions } from './client-options.js';
import { toOutcomes, type WireResponse } from './to-outcome.js';
import { warmUp } from './warm-up.js';

export type { ServiceClientOptions } from './client-options.js';

/** A store that asks the decision service; `close()` releases its channel. */
export interface ServiceClient extends RateLimitStore {
  /**
   * Resolves once the client has connected and made a first call (a health check, which the
   * service counts nowhere), so that the first decision pays for neither; rejects with
   * `ERR_SLUICE_STORE_UNAVAILABLE` when the service has not answered within `deadlineMs` of
   * creation, naming the channel's last connection error (read by one more call of at most
   * 200 ms). Await it before taking traffic; decisions are asked either way.
   */
  ready(): Promise<void>;
  /**
   * Refuses new decisions at once and resolves once those already asked have been answered
   * (each within `deadlineMs`) and the channel is released. Calling it again returns the same promise.
   */
  close(): Promise<void>;
}

type ShouldRateLimit = (
  request: object,
  options: { deadline: number },
  callback: (error: ServiceError | null, response?: WireResponse) => void,
) => void;

/**
 * The value sent for an empty client key: the service refuses an empty value, and no key core
 * makes safe is `#` alone (a hashed key is `#` and 43 characters more).
 */
const EMPTY_KEY = '#';

/**
 * A `RateLimitStore` that asks a `sluice serve` (or any Envoy rate-limit service) instead of
 * keeping state: give it to the Express, Koa or Fastify adapter, or to `createLimiter`, as
 * `store`. Each decision is one `ShouldRateLimit` call under `domain`, with one descriptor
 * per policy, `[{ key: <policy name>, value: <client key> }]`, and the cost as `hits_addend`
 * (0 for `peek`). The service's rules decide; the local policies name the descriptors and
 * describe them in headers, so keep them equal to the rules. The limiter's `onStoreError`
 * and `storeTimeoutMs` apply when the service is down or slow, as with any store.
 *
 * @example
 * const store = createServiceClient({ address: 'rate-limit:8081', domain: 'api' });
 * app.use(rateLimit({ store, policies: [{ name: 'per-ip', limit: 100, window: '1m' }] }));
 */
export function createServiceClient(options: ServiceClientOptions): ServiceClient {
  const { address, domain, credentials, deadlineMs, maxReconnectBackoffMs, logger } = checkClientOptions(options);
  const RateLimitService = makeGenericClientConstructor(rateLimitService(), 'RateLimitService');
  // gRPC's own backoff grows to 2 minutes: a client whose service was down for a minute went
  // on failing for most of a minute after it was back.
  const client = new RateLimitService(address, credentials, {
    'grpc.initial_reconnect_backoff_ms': Math.min(1000, maxReconnectBackoffMs),
    'grpc.max_reconnect_backoff_ms': maxReconnectBackoffMs,
  });
  const call = (client as unknown as { ShouldRateLimit: ShouldRateLimit }).ShouldRateLimit.bind(client);
  // Connects now, as a Redis client does, rather than on the first decision: the channel's
  // set-up would otherwise run in that decision's turn and outlast a short `storeTimeoutMs`.
  const { warmed, cancel: cancelWarmUp } = warmUp(client, address, deadlineMs);
  // `ready()` reports a failure to whoever asks; unasked, it must not end the process.
  warmed.catch(() => {});
  const warned = new Set<string>();
  const warnOnce = (message: string): void => {
    if (warned.has(message)) return;
    warned.add(message);
    logger.warn(message);
  };
  const unsupported = (what: string) =>
    Promise.reject(
      new SluiceError(
        'ERR_SLUICE_UNSUPPORTED',
        `[sluice] The decision service has no ${what}; Envoy's protocol lacks it.`,
      ),
    );

  // The channel stays open until the calls in flight are answered: grpc-js cancels a call
  // asked in the turn its channel closes, which would fail a decision asked before `close()`.
  let inFlight = 0;
  let closed: Promise<void> | undefined;
  let released = () => {};
  const release = () => {
    cancelWarmUp();
    closeChannel(client, deadlineMs, released);
  };

  const closedError = (): Promise<never> =>
    Promise.reject(
      new SluiceError('ERR_SLUICE_STORE_UNAVAILABLE', `[sluice] The service client for ${address} is closed.`),
    );

  const consume = (request: StoreRequest): Promise<StoreReply> => {
    if (closed !== undefined) return closedError();
    // Envoy's `hits_addend` is a uint32: a larger cost would wrap round to a small one on the
    // wire. No limit the service reports exceeds it either, so such a cost never passes.
    if (request.cost > UINT32_MAX) return Promise.resolve(neverPasses(request));
    return new Promise((resolve, reject) => {
      const hits = request.cost === 0 ? { hitsAddend: { value: 0 } } : {};
      const value = request.key === '' ? EMPTY_KEY : request.key;
      const message = {
        domain,
        hitsAddend: request.cost,
        descriptors: request.policies.map((policy) => ({ entries: [{ key: policy.name, value }], ...hits })),
      };
      call(message, { deadline: Date.now() + deadlineMs }, (error, response) => {
        inFlight--;
        if (closed !== undefined && inFlight === 0) release();
        if (error !== null) return reject(callFailure(error, address));
        if (response === undefined) return reject(new Error('empty response'));
        // Thrown here, an error would escape grpc-js as an uncaught exception and leave the
        // decision unsettled: a reply that is no decision, or a logger that throws, fails the call.
        try {
          resolve({ ...toOutcomes(response, request.policies, domain, warnOnce), now: Date.now() });
        } catch (thrown) {
          reject(thrown);
        }
      });
      inFlight++;
    });
  };

  return {
    name: `sluice service ${address}`,
    // The service counts by descriptor, `<policy name>: <client key>`: a limiter's prefix never reaches it.
    countsByPolicyName: true,
    refunds: false,
    checkPolicies(policies, throttle) {
      // One descriptor a policy: past the service's bound every call is refused, and under the
      // default fail policy every request passed, uncounted.
      if (policies.length > REQUEST_LIMITS.descriptors) {
        throw new SluiceError(
          'ERR_SLUICE_CONFLICTING_OPTIONS',
          `[sluice] The decision service takes at most ${REQUEST_LIMITS.descriptors} descriptors a call, one per policy; this limiter has ${policies.length} policies.`,
        );
      }
      // The service decides on its rules' capacities; a capacity raised here would never reach it.
      if (throttle.mode === 'soft' || throttle.mode === 'elastic') {
        throw new SluiceError(
          'ERR_SLUICE_CONFLICTING_OPTIONS',
          `[sluice] A '${throttle.mode}' throttle raises the capacity a store decides on, but the decision service decides on its own rules' capacities: give the rule its throttle in the service's rules instead.`,
        );
      }
    },
    consume,
    // Closed, the client serves nothing, however its warm-up went.
    ready: () => (closed === undefined ? warmed : closedError()),
    reset: () => unsupported('reset'),
    refund: () => unsupported('refund'),
    close() {
      closed ??= new Promise((resolve) => {
        released = resolve;
        if (inFlight === 0) release();
      });
      return closed;
    },
  };
}

/**
 * Closes `client`'s channel once it is not connecting, or after `waitMs`, then calls `done`. A
 * grpc-js channel closed while it connects goes on reconnecting for good: a client closed
 * while its service was down (its warm-up waiting for the connection) knocked on the
 * service's port every second after `close()` had resolved.
 */
function closeChannel(client: Client, waitMs: number, done: () => void): void {
  const channel = client.getChannel();
  const until = Date.now() + waitMs;
  const closeWhenSettled = (): void => {
    const state = channel.getConnectivityState(false);
    if (state === connectivityState.CONNECTING && Date.now() < until) {
      channel.watchConnectivityState(state, until, closeWhenSettled);
      return;
    }
    client.close();
    done();
  };
  closeWhenSettled();
}

/**
 * A failed call, with its gRPC status by name as its `code` (`UNAVAILABLE`, `INVALID_ARGUMENT`,
 * `RESOURCE_EXHAUSTED`, …): grpc-js's own error has a number there, so every failure showed as
 * `error.type="Error"` in metrics, a service down alike to one refusing the calls.
 */
function callFailure(error: ServiceError, address: string): Error {
  const name = status[error.code] ?? 'UNKNOWN';
  return Object.assign(
    new Error(`[sluice] The decision service at ${address} answered ${name}: ${error.details}`, { cause: error }),
    { code: name },
  );
}

/** A refusal of every policy that no wait would lift (`retryAfterMs` Infinity). */
const neverPasses = (request: StoreRequest): StoreReply => ({
  allowed: false,
  now: request.now ?? Date.now(),
  outcomes: request.policies.map(() => ({
    allowed: false,
    remaining: 0,
    resetAfterMs: 0,
    retryAfterMs: Number.POSITIVE_INFINITY,
    delayMs: 0,
  })),
});
