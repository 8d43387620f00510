import { ChannelCredentials, credentials } from '@grpc/grpc-js';
import { checkKnownOptions, invalid, type Logger } from '@sluice/core';
import { expectedCredentials } from '../grpc-credentials.js';
import { REQUEST_LIMITS } from '../request-checks.js';
import { invalidOption, positive } from '../server-options.js';
import { isGrpcTarget } from './grpc-target.js';

/** A UTF-16 surrogate without its pair, which UTF-8 cannot encode. */
const LONE_SURROGATE = /\p{Surrogate}/u;

export interface ServiceClientOptions {
  /** The service's gRPC address, e.g. `'127.0.0.1:8081'`. */
  address: string;
  /** The rules domain every decision is asked under. */
  domain: string;
  /** @default insecure (plain HTTP/2) */
  credentials?: ChannelCredentials | undefined;
  /** gRPC deadline per call; the limiter's `storeTimeoutMs` usually answers first. @default 1000 */
  deadlineMs?: number | undefined;
  /** Longest wait between two attempts to reach a service that is down. @default 1000 */
  maxReconnectBackoffMs?: number | undefined;
  /** Receives one-time warnings (a policy the service has no rule for). @default console */
  logger?: Logger | undefined;
}

export type CheckedClientOptions = { [K in keyof ServiceClientOptions]-?: Exclude<ServiceClientOptions[K], undefined> };

const names = ['address', 'domain', 'credentials', 'deadlineMs', 'maxReconnectBackoffMs', 'logger'];

/** Validates `createServiceClient`'s options: a mistake fails at start-up, not at every decision. */
export function checkClientOptions(options: ServiceClientOptions): CheckedClientOptions {
  if (typeof options !== 'object' || options === null) invalidOption('options', options, 'an object');
  checkKnownOptions(options, names);
  const { address, domain, logger = console } = options;
  // One grpc-js cannot reach would fail every call on name resolution (a URL's scheme among them).
  if (typeof address !== 'string' || !isGrpcTarget(address))
    invalidOption(
      'address',
      address,
      'a gRPC address such as "127.0.0.1:8081", "[::1]:8081" or "dns:rate-limit:8081", without http://',
    );
  // The service refuses, in every call (INVALID_ARGUMENT), a longer domain and one that is no
  // UTF-8 (a lone surrogate): an outage for good.
  if (
    typeof domain !== 'string' ||
    domain === '' ||
    domain.length > REQUEST_LIMITS.domainLength ||
    LONE_SURROGATE.test(domain)
  )
    invalidOption(
      'domain',
      domain,
      `the rules domain to ask under, 1 to ${REQUEST_LIMITS.domainLength} characters of UTF-8 (no lone surrogate)`,
    );
  // `undefined` alone means plaintext: a `null` is a mistake, never a quiet fall back to it.
  const given = options.credentials === undefined ? credentials.createInsecure() : options.credentials;
  if (!(given instanceof ChannelCredentials))
    invalidOption('credentials', given, expectedCredentials(given, 'ChannelCredentials', 'credentials.createSsl()'));
  if (typeof logger?.warn !== 'function')
    invalid('ERR_SLUICE_INVALID_LOGGER', 'logger', logger, 'an object with a `warn(message)` method');
  return {
    address,
    domain,
    credentials: given,
    deadlineMs: positive(options.deadlineMs, 'deadlineMs', 1000),
    maxReconnectBackoffMs: positive(options.maxReconnectBackoffMs, 'maxReconnectBackoffMs', 1000),
    logger,
  };
}
