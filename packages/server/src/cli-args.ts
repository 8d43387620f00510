import { parseArgs } from 'node:util';
import { SluiceError, type StandardHeaders } from '@sluice/core';
import { checkStoreTimeoutBelowRequest, invalidOption, isHost, MAX_IDLE_TIMEOUT_MS } from './server-options.js';
import type { TlsFiles } from './tls.js';

/** One Redis by URL, or a Cluster's start-up nodes with what every node's connection needs. */
export type RedisTarget =
  | { url: string }
  | { nodes: { host: string; port: number }[]; tls: boolean; username?: string; password?: string };

export interface ServeFlags {
  /** A file or directory, watched; or the key of a hash in the service's Redis, written by `publishRules`. */
  rules: { path: string } | { redisKey: string };
  redis: RedisTarget | undefined;
  grpcPort: number;
  httpPort: number;
  host: string;
  headers: StandardHeaders | undefined;
  storeTimeoutMs: number;
  requestTimeoutMs: number;
  grpcIdleTimeoutMs: number;
  /** The proxies refuse a request the service did not answer in time (Envoy's `failure_mode_deny`). */
  failureModeDeny: boolean;
  /** Every call answered OK, the statuses saying what the rules decided (envoyproxy's `SHADOW_MODE`). */
  shadowMode: boolean;
  /** gRPC over TLS; plain when absent. */
  tls: TlsFiles | undefined;
}

export const USAGE = `Usage: sluice serve --rules <file|dir> [options]
       sluice serve --rules-key <key> --redis <url> [options]
       sluice publish-rules --rules <file> --rules-key <key> --redis <url>

serve: serves Envoy's rate-limit protocol: gRPC envoy.service.ratelimit.v3.RateLimitService
and grpc.health.v1.Health; HTTP POST /json, GET /healthcheck, GET /metrics, GET /rlconfig.
publish-rules: checks a rules document and stores it in Redis for every server that serves
with --rules-key; they reload it at once. Prints its version.

Options:
  --rules <file|dir>              rules document(s), reloaded on change
  --rules-key <key>               instead, the rules in this Redis hash (publish-rules writes it),
                                  reloaded when published; needs --redis or --redis-cluster
  --redis <url>                   a Redis, e.g. redis://127.0.0.1:6379 (default: in-memory)
  --redis-cluster <host:port,…>   Redis Cluster start-up nodes, after rediss:// and
                                  user:password@ when every node needs them
  --grpc-port <port>              default 8081
  --http-port <port>              default 8080
  --host <address>                default 0.0.0.0
  --headers <draft-11|draft-7|draft-6>
                                  add the IETF RateLimit fields to response_headers_to_add
  --store-timeout-ms <ms>         longest wait on the store per call, default 100
  --request-timeout-ms <ms>       longest a request may take to arrive, and a gRPC answer to
                                  leave after it, at least 4 × --store-timeout-ms, default 10000
  --grpc-idle-timeout-ms <ms>     close a gRPC connection with no call open this long,
                                  default 300000
  --failure-mode-deny             the proxies refuse a request the service did not answer in
                                  time (Envoy's failure_mode_deny: true): a call whose caller
                                  gave up costs nothing
  --shadow-mode                   answer every call OK, each status saying what the rules
                                  decided (envoyproxy/ratelimit's SHADOW_MODE=true)
  --tls-cert <file> --tls-key <file>
                                  serve gRPC over TLS with this PEM certificate (chain) and key,
                                  read again every 10 s for a renewal
  --tls-client-ca <file>          with them, require client certificates this CA signed
  --help                          this text`;

const integer = (text: string | undefined, option: string, fallback: number, min: number, max: number): number => {
  if (text === undefined) return fallback;
  const value = /^\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!(value >= min && value <= max)) invalidOption(option, text, `a whole number from ${min} to ${max}`);
  return value;
};

/**
 * `[redis[s]://[user:password@]]host:port,…`: a scheme and credentials, given once before the
 * first node, hold for every node, as a Cluster's nodes share them.
 */
function clusterTarget(text: string): RedisTarget {
  const shape = 'a list of host:port, comma-separated, optionally after redis:// or rediss:// and user:password@';
  // The credentials run to the last `@`: a password may hold `/`, a space or an `@` unencoded.
  const [, scheme, userinfo, list] = /^(?:(rediss?):\/\/(?:(.*)@)?)?(.*)$/i.exec(text) as string[];
  const nodes = (list as string).split(',').map((item) => {
    const match = /^([^@/\s]+):(\d+)$/.exec(item.trim());
    if (match === null) invalidOption('--redis-cluster', redacted(text), shape);
    return { host: match[1] as string, port: integer(match[2], '--redis-cluster', 0, 1, 65535) };
  });
  const target = { nodes, tls: scheme?.toLowerCase() === 'rediss' };
  if (userinfo === undefined) return target;
  // Split by hand: a URL parser would read a `/` in the password as the start of a path.
  const colon = userinfo.indexOf(':');
  const decoded = (part: string): string => {
    try {
      return decodeURIComponent(part);
    } catch {
      return invalidOption('--redis-cluster', redacted(text), `${shape}, its %-escapes whole`);
    }
  };
  const username = decoded(colon < 0 ? userinfo : userinfo.slice(0, colon));
  const password = colon < 0 ? '' : decoded(userinfo.slice(colon + 1));
  if (password === '') invalidOption('--redis-cluster', redacted(text), `${shape}, with a password`);
  return { ...target, ...(username === '' ? {} : { username }), password };
}

/**
 * A Redis URL or node list as messages and logs show it: any password as `***`, up to the last
 * `@` before the host, where a client splits an unencoded `@` in a password.
 */
export const redacted = (text: string): string => text.replace(/(rediss?:\/\/[^:@/\s]*:).*@/gi, '$1***@');

const REDIS_OPTIONS = { redis: { type: 'string' }, 'redis-cluster': { type: 'string' } } as const;

/**
 * Flags as `parseArgs` reads them; an unknown one, or one given twice, throws
 * ERR_SLUICE_INVALID_SERVER_OPTION: `parseArgs` keeps the last of two, so a second `--rules`
 * would quietly serve other rules than the first names.
 */
function flagsOf(
  args: readonly string[],
  options: Record<string, { type: 'string' | 'boolean' }>,
): Record<string, string | boolean | undefined> {
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args: [...args], strict: true, allowPositionals: false, options, tokens: true });
  } catch (error) {
    // Node's first sentence says what is wrong ("Unknown option '--bogus'"); the rest is advice
    // on positional arguments, which no command here takes.
    const what = (error as Error).message.split('. ')[0] as string;
    throw new SluiceError(
      'ERR_SLUICE_INVALID_SERVER_OPTION',
      `[sluice] ${redacted(what)}, in: ${args.map(redacted).join(' ')}`,
    );
  }
  const seen = new Set<string>();
  for (const token of parsed.tokens ?? []) {
    if (token.kind !== 'option') continue;
    if (seen.has(token.name))
      throw new SluiceError(
        'ERR_SLUICE_INVALID_SERVER_OPTION',
        `[sluice] Option '--${token.name}' is given twice; give it once, in: ${args.map(redacted).join(' ')}`,
      );
    seen.add(token.name);
  }
  // No option is `multiple`: each value is one string or boolean.
  return parsed.values as Record<string, string | boolean | undefined>;
}

function redisTarget(values: Record<string, string | boolean | undefined>): RedisTarget | undefined {
  const url = values.redis as string | undefined;
  const cluster = values['redis-cluster'] as string | undefined;
  if (url !== undefined && cluster !== undefined)
    invalidOption('--redis', redacted(url), 'left out when --redis-cluster is given');
  if (url !== undefined) checkRedisUrl(url);
  return url !== undefined ? { url } : cluster !== undefined ? clusterTarget(cluster) : undefined;
}

/**
 * A `--redis` URL ioredis reads as written: one it cannot parse failed later with an uncoded
 * error, and a database that is no number made it send `SELECT NaN`, which crashed the process.
 */
function checkRedisUrl(url: string): void {
  const shape =
    'a URL such as redis://127.0.0.1:6379, with a database number as its path if any (…/2), and no query: ioredis reads one as client options (?db=, ?keyPrefix=), unchecked';
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    invalidOption('--redis', redacted(url), shape);
  }
  if (!/^rediss?:$/.test(parsed.protocol) || !/^(\/\d*)?$/.test(parsed.pathname) || url.includes('?'))
    invalidOption('--redis', redacted(url), shape);
}

/** `--rules` or `--rules-key`, exactly one; a key only where a Redis holds it. */
function rulesSource(
  values: Record<string, string | boolean | undefined>,
  redis: RedisTarget | undefined,
): ServeFlags['rules'] {
  const path = values.rules as string | undefined;
  const key = values['rules-key'] as string | undefined;
  if (path !== undefined && key !== undefined) invalidOption('--rules-key', key, 'left out when --rules is given');
  if (key !== undefined) {
    if (key === '') invalidOption('--rules-key', key, 'the key of the rules hash');
    if (redis === undefined) invalidOption('--rules-key', key, 'given with --redis or --redis-cluster');
    return { redisKey: key };
  }
  if (path === undefined || path === '')
    invalidOption('--rules', path, 'a rules file or directory (or --rules-key with --redis)');
  return { path };
}

/** `--tls-cert` and `--tls-key`, both or neither; `--tls-client-ca` only with them. */
function tlsFiles(values: Record<string, string | boolean | undefined>): TlsFiles | undefined {
  const [cert, key, clientCa] = ['tls-cert', 'tls-key', 'tls-client-ca'].map(
    (name) => values[name] as string | undefined,
  );
  if (cert === undefined && key === undefined) {
    if (clientCa !== undefined) invalidOption('--tls-client-ca', clientCa, 'given with --tls-cert and --tls-key');
    return undefined;
  }
  if (cert === undefined || cert === '')
    invalidOption('--tls-cert', cert, 'the certificate file, given with --tls-key');
  if (key === undefined || key === '') invalidOption('--tls-key', key, 'the private key file, given with --tls-cert');
  if (clientCa === '') invalidOption('--tls-client-ca', clientCa, 'a CA certificate file');
  return { cert, key, clientCa };
}

/** `sluice serve`'s flags; a bad or unknown flag throws ERR_SLUICE_INVALID_SERVER_OPTION. */
export function parseServeArgs(args: readonly string[]): ServeFlags | 'help' {
  const values = flagsOf(args, {
    rules: { type: 'string' },
    'rules-key': { type: 'string' },
    ...REDIS_OPTIONS,
    'grpc-port': { type: 'string' },
    'http-port': { type: 'string' },
    host: { type: 'string' },
    headers: { type: 'string' },
    'store-timeout-ms': { type: 'string' },
    'request-timeout-ms': { type: 'string' },
    'grpc-idle-timeout-ms': { type: 'string' },
    'failure-mode-deny': { type: 'boolean' },
    'shadow-mode': { type: 'boolean' },
    'tls-cert': { type: 'string' },
    'tls-key': { type: 'string' },
    'tls-client-ca': { type: 'string' },
    help: { type: 'boolean' },
  });
  if (values.help === true) return 'help';
  const str = (name: string): string | undefined => values[name] as string | undefined;
  const redis = redisTarget(values);
  const rules = rulesSource(values, redis);
  const headers = str('headers');
  const host = str('host');
  if (host !== undefined && !isHost(host))
    invalidOption('--host', host, 'an address such as 0.0.0.0, :: or 127.0.0.1, or a host name');
  if (headers !== undefined && !['draft-11', 'draft-7', 'draft-6'].includes(headers))
    invalidOption('--headers', headers, 'draft-11, draft-7 or draft-6');
  const storeTimeoutMs = integer(str('store-timeout-ms'), '--store-timeout-ms', 100, 1, 60_000);
  const requestTimeoutMs = integer(str('request-timeout-ms'), '--request-timeout-ms', 10_000, 1, 600_000);
  checkStoreTimeoutBelowRequest(storeTimeoutMs, requestTimeoutMs, ['--store-timeout-ms', '--request-timeout-ms']);
  return {
    rules,
    redis,
    grpcPort: integer(str('grpc-port'), '--grpc-port', 8081, 0, 65535),
    httpPort: integer(str('http-port'), '--http-port', 8080, 0, 65535),
    host: host ?? '0.0.0.0',
    headers: headers as StandardHeaders | undefined,
    storeTimeoutMs,
    requestTimeoutMs,
    grpcIdleTimeoutMs: integer(str('grpc-idle-timeout-ms'), '--grpc-idle-timeout-ms', 300_000, 1, MAX_IDLE_TIMEOUT_MS),
    failureModeDeny: values['failure-mode-deny'] === true,
    shadowMode: values['shadow-mode'] === true,
    tls: tlsFiles(values),
  };
}

export interface PublishFlags {
  file: string;
  key: string;
  redis: RedisTarget;
}

/** `sluice publish-rules`'s flags; a bad or unknown flag throws ERR_SLUICE_INVALID_SERVER_OPTION. */
export function parsePublishArgs(args: readonly string[]): PublishFlags | 'help' {
  const values = flagsOf(args, {
    rules: { type: 'string' },
    'rules-key': { type: 'string' },
    ...REDIS_OPTIONS,
    help: { type: 'boolean' },
  });
  if (values.help === true) return 'help';
  const redis = redisTarget(values);
  if (redis === undefined) invalidOption('--redis', undefined, 'the Redis to publish to (or --redis-cluster)');
  const file = values.rules as string | undefined;
  if (file === undefined || file === '') invalidOption('--rules', file, 'the rules file to publish');
  const key = values['rules-key'] as string | undefined;
  if (key === undefined || key === '') invalidOption('--rules-key', key, 'the key of the rules hash');
  return { file, key, redis };
}
