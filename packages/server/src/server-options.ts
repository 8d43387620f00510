import { isIP } from 'node:net';
import { ServerCredentials } from '@grpc/grpc-js';
import {
  checkHeaders,
  checkKnownOptions,
  type HeadersOptions,
  isEpochMs,
  isRateLimitStore,
  isRuleSet,
  isTimerMs,
  MAX_TIMER_MS,
  type RateLimitStore,
  type ResolvedHeaders,
  SluiceError,
} from '@sluice/core';
import { createMemoryStore } from '@sluice/memory';
import { expectedCredentials } from './grpc-credentials.js';
import { createServiceLog, type ServiceLog } from './log.js';
import type { RulesSource } from './rules-source.js';

export interface DecisionServerOptions {
  /** The rules in force: a rule set, or a watcher (`watchRules`) whose current set each call reads. */
  rules: RulesSource;
  /** @default a new memory store */
  store?: RateLimitStore | undefined;
  /** gRPC port; 0 picks a free one. @default 8081 */
  grpcPort?: number | undefined;
  /** HTTP port (`/json`, `/healthcheck`, `/metrics`); 0 picks a free one. @default 8080 */
  httpPort?: number | undefined;
  /** Address both listen on. @default '0.0.0.0' */
  host?: string | undefined;
  /** The gRPC port's security, such as `ServerCredentials.createSsl(…)` for TLS. @default insecure */
  grpcCredentials?: ServerCredentials | undefined;
  /** The IETF RateLimit fields in `response_headers_to_add`, or `false` for none. @default false */
  headers?: HeadersOptions | false | undefined;
  /** Longest wait on the store before a call fails with UNAVAILABLE. @default 100 */
  storeTimeoutMs?: number | undefined;
  /** How long `close()` lets calls in flight finish before cutting them off. @default 10000 */
  shutdownTimeoutMs?: number | undefined;
  /**
   * Longest a request may take to arrive, from its headers to its last byte, on either port:
   * past it gRPC answers DEADLINE_EXCEEDED and HTTP 408, and what had arrived is dropped. Also
   * the longest a gRPC answer may take to leave, from the request's arrival (past it the
   * stream is reset): at least four times `storeTimeoutMs` (refused otherwise). @default 10000
   */
  requestTimeoutMs?: number | undefined;
  /**
   * A gRPC connection with no call open this long is closed, with a GOAWAY first; at most a
   * day. The service pings each connection as often, and ends one whose ping goes unanswered
   * as long. @default 300000
   */
  grpcIdleTimeoutMs?: number | undefined;
  /**
   * As the proxies in front set Envoy's `failure_mode_deny`: `true` when they refuse a request
   * the service did not answer in time. A call whose caller gave up (cancelled, deadline past,
   * connection closed) then costs nothing: it is not decided, or its charge is given back. Left
   * `false`, such a request went through, and its charge stands. @default false
   */
  failureModeDeny?: boolean | undefined;
  /**
   * Answers every call OK, as envoyproxy/ratelimit's `SHADOW_MODE=true` does: each descriptor's
   * status still says what the rules decided (`OVER_LIMIT`, remaining 0), and a call the rules
   * refused spends nothing, as a refusal never does; `/metrics` counts it as `shadow`. For
   * trying rules on live traffic before they refuse anything. @default false
   */
  shadowMode?: boolean | undefined;
  /** Epoch ms, for tests; stores use their own clock when absent. */
  clock?: (() => number) | undefined;
  /** Structured log lines; default JSON on stderr. */
  log?: ServiceLog | undefined;
}

export interface CheckedServerOptions {
  rules: RulesSource;
  store: RateLimitStore;
  grpcPort: number;
  httpPort: number;
  host: string;
  grpcCredentials: ServerCredentials;
  headers: ResolvedHeaders | undefined;
  storeTimeoutMs: number;
  shutdownTimeoutMs: number;
  requestTimeoutMs: number;
  grpcIdleTimeoutMs: number;
  failureModeDeny: boolean;
  shadowMode: boolean;
  clock: (() => number) | undefined;
  log: ServiceLog;
}

const names = [
  'rules',
  'store',
  'grpcPort',
  'httpPort',
  'host',
  'grpcCredentials',
  'headers',
  'storeTimeoutMs',
  'shutdownTimeoutMs',
  'requestTimeoutMs',
  'grpcIdleTimeoutMs',
  'failureModeDeny',
  'shadowMode',
  'clock',
  'log',
];

/** Names the closest spelling would miss: `port` is nearer `host` than either port's name. */
const HINTS = { port: '`grpcPort` (gRPC) or `httpPort` (HTTP)' };

/** Names the option, the value received and what was expected. */
export function invalidOption(option: string, value: unknown, expected: string): never {
  const received =
    typeof value === 'string' ? JSON.stringify(value) : typeof value === 'object' ? typeof value : String(value);
  throw new SluiceError(
    'ERR_SLUICE_INVALID_SERVER_OPTION',
    `[sluice] Option \`${option}\` must be ${expected}; received ${received}.`,
  );
}

/**
 * A decision must be able to fail on the store's timeout before the request's own ends: else a
 * slow store resets the call (`DEADLINE_EXCEEDED`, 408) where the proxy's failure mode expects
 * `UNAVAILABLE` (503), and health never hears of the store's failure. A call asks the store up
 * to three times, one after another, each within the store's timeout: its decision, a refund of
 * what it charged when one of its descriptors was refused, and a look at the figures after it.
 * A fourth as long again is left for the process, whose timers fire late under load (three
 * timeouts of a third of the request's reset 1 call in 50 at 33 ms and 100 ms).
 */
export function checkStoreTimeoutBelowRequest(
  storeTimeoutMs: number,
  requestTimeoutMs: number,
  [storeOption, requestOption]: readonly [string, string],
): void {
  if (4 * storeTimeoutMs > requestTimeoutMs)
    invalidOption(
      storeOption,
      storeTimeoutMs,
      `at most a quarter of \`${requestOption}\` (${requestTimeoutMs}): a call may ask the store three times, one after another (its decision, a refund when one of its descriptors was refused, a look at the figures after it), and must be answered within \`${requestOption}\``,
    );
}

function port(value: unknown, option: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || (value as number) < 0 || (value as number) > 65535)
    invalidOption(option, value, 'a port number from 0 to 65535');
  return value as number;
}

/** A wait in ms, held to what a Node timer keeps (one set longer fires after 1 ms), or to `most`. */
export function positive(value: unknown, option: string, fallback: number, most = MAX_TIMER_MS): number {
  if (value === undefined) return fallback;
  if (!isTimerMs(value) || value > most)
    invalidOption(option, value, `a positive whole number of milliseconds, at most ${most}`);
  return value;
}

/** The most `grpcIdleTimeoutMs` takes, a day: grpc-js reads 2^31 − 1 ms as no idle close and no pings at all. */
export const MAX_IDLE_TIMEOUT_MS = 86_400_000;

/**
 * The store the options name, checked as a limiter checks it, before anything reads it (a bad
 * one found by the first rule's limiter would read as a problem of the rules); the memory
 * store when left out.
 */
function storeOf(value: unknown): RateLimitStore {
  if (value === undefined) return createMemoryStore();
  if (!isRateLimitStore(value))
    invalidOption('store', value, 'a store such as createRedisStore({ client }), or left out for the memory store');
  return value;
}

/** Validates `createDecisionServer`'s options at construction (SPEC: bad config fails at start-up). */
export function checkServerOptions(options: DecisionServerOptions): CheckedServerOptions {
  if (typeof options !== 'object' || options === null) invalidOption('options', options, 'an object');
  checkKnownOptions(options, names, HINTS);
  const { rules } = options;
  const ruleSet = typeof rules === 'object' && rules !== null && 'current' in rules ? rules.current : rules;
  // core's test of a set's shape, and the list of rules the service reads besides.
  if (!isRuleSet(ruleSet) || !Array.isArray((ruleSet as { rules?: unknown }).rules))
    invalidOption('rules', rules, 'a rule set from parseRules/loadRules, or a watcher from watchRules');
  if (options.host !== undefined && !isHost(options.host))
    invalidOption('host', options.host, 'an address such as "0.0.0.0", "::" or "127.0.0.1", or a host name');
  // `undefined` alone means plaintext: a `null` (a loader that found no certificate) is a
  // mistake, never a quiet fall back to an unencrypted port.
  const grpcCredentials =
    options.grpcCredentials === undefined ? ServerCredentials.createInsecure() : options.grpcCredentials;
  if (!(grpcCredentials instanceof ServerCredentials))
    invalidOption(
      'grpcCredentials',
      grpcCredentials,
      expectedCredentials(grpcCredentials, 'ServerCredentials', 'ServerCredentials.createSsl()'),
    );
  // Read once here: a clock that gives no whole number (`() => 'now'`) would fail every call.
  if (options.clock !== undefined && (typeof options.clock !== 'function' || !isEpochMs(options.clock())))
    invalidOption('clock', options.clock, 'a function returning whole epoch milliseconds');
  const { log, failureModeDeny = false, shadowMode = false } = options;
  if (typeof failureModeDeny !== 'boolean')
    invalidOption('failureModeDeny', failureModeDeny, "a boolean, as the proxies' failure_mode_deny");
  if (typeof shadowMode !== 'boolean') invalidOption('shadowMode', shadowMode, 'a boolean');
  if (log !== undefined && (typeof log?.line !== 'function' || typeof log.warn !== 'function'))
    invalidOption('log', log, 'a service log with `line(level, message, fields)` and `warn(message)`');
  const storeTimeoutMs = positive(options.storeTimeoutMs, 'storeTimeoutMs', 100);
  const requestTimeoutMs = positive(options.requestTimeoutMs, 'requestTimeoutMs', 10_000);
  checkStoreTimeoutBelowRequest(storeTimeoutMs, requestTimeoutMs, ['storeTimeoutMs', 'requestTimeoutMs']);
  return {
    rules,
    store: storeOf(options.store),
    grpcPort: port(options.grpcPort, 'grpcPort', 8081),
    httpPort: port(options.httpPort, 'httpPort', 8080),
    host: options.host ?? '0.0.0.0',
    grpcCredentials,
    headers: options.headers === undefined || options.headers === false ? undefined : checkHeaders(options.headers),
    storeTimeoutMs,
    shutdownTimeoutMs: positive(options.shutdownTimeoutMs, 'shutdownTimeoutMs', 10_000),
    requestTimeoutMs,
    grpcIdleTimeoutMs: positive(options.grpcIdleTimeoutMs, 'grpcIdleTimeoutMs', 300_000, MAX_IDLE_TIMEOUT_MS),
    failureModeDeny,
    shadowMode,
    clock: options.clock,
    log: log ?? createServiceLog(),
  };
}

/** One DNS label: letters, digits and inner hyphens, 1 to 63 characters. */
const LABEL = '[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?';
const HOST_NAME = new RegExp(`^(?=.{1,253}$)${LABEL}(?:\\.${LABEL})*$`);

/**
 * An IP address or a host name (`localhost`): anything else (`127.0.0.1:80`, a space) would
 * fail only at `listen()`, with DNS's ENOTFOUND, rather than as the bad option it is.
 */
export const isHost = (host: unknown): boolean =>
  typeof host === 'string' && (isIP(host) !== 0 || HOST_NAME.test(host));
