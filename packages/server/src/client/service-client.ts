import { type ChannelCredentials, type Client, credentials, loadPackageDefinition } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { type Logger, type RateLimitStore, SluiceError, type StoreReply, type StoreRequest } from '@sluice/core';
import { LOADER_OPTIONS, PROTO_DIR } from '../proto.js';
import { invalidOption } from '../server-options.js';
import { UINT32_MAX } from '../wire-types.js';
import { toOutcomes, type WireResponse } from './to-outcome.js';

export interface ServiceClientOptions {
  /** The service's gRPC address, e.g. `'127.0.0.1:8081'`. */
  address: string;
  /** The rules domain every decision is asked under. */
  domain: string;
  /** @default insecure (plain HTTP/2) */
  credentials?: ChannelCredentials;
  /** gRPC deadline per call; the limiter's `storeTimeoutMs` usually answers first. @default 1000 */
  deadlineMs?: number;
  /** Receives one-time warnings (a policy the service has no rule for). @default console */
  logger?: Logger;
}

/** A store that asks the decision service; `close()` releases its channel. */
export interface ServiceClient extends RateLimitStore {
  close(): void;
}

type ShouldRateLimit = (
  request: object,
  options: { deadline: number },
  callback: (error: Error | null, response?: WireResponse) => void,
) => void;

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
  if (typeof options?.address !== 'string' || options.address === '')
    invalidOption('address', options?.address, 'a gRPC address such as "127.0.0.1:8081"');
  if (typeof options.domain !== 'string' || options.domain === '')
    invalidOption('domain', options.domain, 'the rules domain to ask under');
  const deadlineMs = options.deadlineMs ?? 1000;
  if (!Number.isSafeInteger(deadlineMs) || deadlineMs <= 0)
    invalidOption('deadlineMs', deadlineMs, 'a positive whole number of milliseconds');
  const logger = options.logger ?? console;
  const definition = loadSync('envoy/service/ratelimit/v3/rls.proto', { ...LOADER_OPTIONS, includeDirs: [PROTO_DIR] });
  const Service = (loadPackageDefinition(definition) as unknown as Record<string, never>).envoy as unknown as {
    service: { ratelimit: { v3: { RateLimitService: new (address: string, creds: ChannelCredentials) => Client } } };
  };
  const client = new Service.service.ratelimit.v3.RateLimitService(
    options.address,
    options.credentials ?? credentials.createInsecure(),
  );
  const call = (client as unknown as { ShouldRateLimit: ShouldRateLimit }).ShouldRateLimit.bind(client);
  // Connects now, as a Redis client does, rather than on the first decision: the channel's
  // setup (name resolution, HTTP/2, modules grpc-js loads on first use) would otherwise run
  // in that decision's turn and outlast a short `storeTimeoutMs`.
  client.getChannel().getConnectivityState(true);
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

  const consume = (request: StoreRequest): Promise<StoreReply> => {
    // Envoy's `hits_addend` is a uint32: a larger cost would wrap round to a small one on the
    // wire. No limit the service reports exceeds it either, so such a cost never passes.
    if (request.cost > UINT32_MAX) return Promise.resolve(neverPasses(request));
    return new Promise((resolve, reject) => {
      const hits = request.cost === 0 ? { hitsAddend: { value: 0 } } : {};
      const message = {
        domain: options.domain,
        hitsAddend: request.cost,
        descriptors: request.policies.map((policy) => ({
          entries: [{ key: policy.name, value: request.key }],
          ...hits,
        })),
      };
      call(message, { deadline: Date.now() + deadlineMs }, (error, response) => {
        if (error !== null || response === undefined) return reject(error ?? new Error('empty response'));
        const decided = toOutcomes(response, request.policies, options.domain, warnOnce);
        if (decided === undefined) {
          const code = String(response.overallCode ?? 'none');
          const message = `[sluice] The decision service answered overall_code ${code}, neither OK nor OVER_LIMIT.`;
          return reject(new SluiceError('ERR_SLUICE_BAD_STORE_REPLY', message));
        }
        resolve({ ...decided, now: Date.now() });
      });
    });
  };

  return {
    name: `sluice service ${options.address}`,
    checkPolicies(_policies, throttle) {
      // The service decides on its rules' capacities; a capacity raised here would never reach it.
      if (throttle.mode === 'soft' || throttle.mode === 'elastic') {
        throw new SluiceError(
          'ERR_SLUICE_CONFLICTING_OPTIONS',
          `[sluice] A '${throttle.mode}' throttle raises the capacity a store decides on, but the decision service decides on its own rules' capacities: give the rule its throttle in the service's rules instead.`,
        );
      }
    },
    consume,
    reset: () => unsupported('reset'),
    refund: () => unsupported('refund'),
    close: () => client.close(),
  };
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
