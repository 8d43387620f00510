import { parseArgs } from 'node:util';
import type { StandardHeaders } from '@sluice/core';
import { invalidOption } from './server-options.js';

export interface ServeFlags {
  rules: string;
  redis: { url: string } | { nodes: { host: string; port: number }[] } | undefined;
  grpcPort: number;
  httpPort: number;
  host: string;
  headers: StandardHeaders | undefined;
  storeTimeoutMs: number;
}

export const USAGE = `Usage: sluice serve --rules <file|dir> [options]

Serves Envoy's rate-limit protocol: gRPC envoy.service.ratelimit.v3.RateLimitService and
grpc.health.v1.Health; HTTP POST /json, GET /healthcheck, GET /metrics.

Options:
  --rules <file|dir>              rules document(s), reloaded on change (required)
  --redis <url>                   a Redis, e.g. redis://127.0.0.1:6379 (default: in-memory)
  --redis-cluster <host:port,…>   Redis Cluster start-up nodes
  --grpc-port <port>              default 8081
  --http-port <port>              default 8080
  --host <address>                default 0.0.0.0
  --headers <draft-11|draft-7|draft-6>
                                  add the IETF RateLimit fields to response_headers_to_add
  --store-timeout-ms <ms>         longest wait on the store per call, default 100
  --help                          this text`;

const integer = (text: string | undefined, option: string, fallback: number, min: number, max: number): number => {
  if (text === undefined) return fallback;
  const value = /^\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!(value >= min && value <= max)) invalidOption(option, text, `a whole number from ${min} to ${max}`);
  return value;
};

function clusterNodes(text: string): { host: string; port: number }[] {
  return text.split(',').map((item) => {
    const match = /^(.+):(\d+)$/.exec(item.trim());
    if (match === null) invalidOption('--redis-cluster', text, 'a list of host:port, comma-separated');
    return { host: match[1] as string, port: integer(match[2], '--redis-cluster', 0, 1, 65535) };
  });
}

/** `sluice serve`'s flags; a bad or unknown flag throws ERR_SLUICE_INVALID_SERVER_OPTION. */
export function parseServeArgs(args: readonly string[]): ServeFlags | 'help' {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: [...args],
      strict: true,
      allowPositionals: false,
      options: {
        rules: { type: 'string' },
        redis: { type: 'string' },
        'redis-cluster': { type: 'string' },
        'grpc-port': { type: 'string' },
        'http-port': { type: 'string' },
        host: { type: 'string' },
        headers: { type: 'string' },
        'store-timeout-ms': { type: 'string' },
        help: { type: 'boolean' },
      },
    }));
  } catch (error) {
    invalidOption('flags', args.join(' '), `known flags (${(error as Error).message})`);
  }
  if (values.help === true) return 'help';
  const str = (name: string): string | undefined => values[name] as string | undefined;
  const rules = str('rules');
  if (rules === undefined || rules === '') invalidOption('--rules', rules, 'a rules file or directory');
  const url = str('redis');
  const cluster = str('redis-cluster');
  if (url !== undefined && cluster !== undefined)
    invalidOption('--redis', url, 'left out when --redis-cluster is given');
  if (url !== undefined && !/^rediss?:\/\//.test(url))
    invalidOption('--redis', url, 'a URL such as redis://127.0.0.1:6379');
  const headers = str('headers');
  if (headers !== undefined && !['draft-11', 'draft-7', 'draft-6'].includes(headers))
    invalidOption('--headers', headers, 'draft-11, draft-7 or draft-6');
  return {
    rules,
    redis: url !== undefined ? { url } : cluster !== undefined ? { nodes: clusterNodes(cluster) } : undefined,
    grpcPort: integer(str('grpc-port'), '--grpc-port', 8081, 0, 65535),
    httpPort: integer(str('http-port'), '--http-port', 8080, 0, 65535),
    host: str('host') ?? '0.0.0.0',
    headers: headers as StandardHeaders | undefined,
    storeTimeoutMs: integer(str('store-timeout-ms'), '--store-timeout-ms', 100, 1, 60_000),
  };
}
