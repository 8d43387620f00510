import type { RateLimitStore } from '@sluice/core';
import { messageOf } from '@sluice/core';
import {
  ignoredRuleFiles,
  type ReloadOptions,
  type RuleSet,
  type RulesWatcher,
  watchRedisRules,
  watchRules,
} from '@sluice/rules';
import type { ServeFlags } from './cli-args.js';
import { createDecisionServer } from './decision-server.js';
import type { ServiceLog } from './log.js';
import { connectRedis, type RedisConnection } from './redis-connection.js';
import { invalidOption } from './server-options.js';
import { serveTls, type TlsWatch } from './tls-watch.js';

/** How often `--tls-cert`, `--tls-key` and `--tls-client-ca` are read again for a renewal. */
const TLS_CHECK_INTERVAL_MS = 10_000;

export interface RunningService {
  grpcPort: number;
  httpPort: number;
  /** Graceful stop: calls in flight finish, then the rules watcher and Redis are closed. */
  stop(): Promise<void>;
}

/**
 * `sluice serve`: loads the rules (a bad document stops start-up), connects to Redis when
 * asked (an unreachable one stops start-up), then serves, reloads the rules on change, and
 * reports Redis losses through health while ioredis reconnects. Rules from a file are read
 * before Redis is reached, rules from Redis once it is.
 */
export async function serve(flags: ServeFlags, log: ServiceLog): Promise<RunningService> {
  const source = 'path' in flags.rules ? flags.rules.path : `redis:${flags.rules.redisKey}`;
  // Reloads while Redis is reached, before the server (and its metrics) exist, are counted
  // once it does.
  const early: ('success' | 'error')[] = [];
  let reportLoad = (result: 'success' | 'error'): void => {
    early.push(result);
  };
  // The server checks the first set itself, when it is made; every reload after it here.
  let checkRules: (rules: RuleSet) => void = () => {};
  const reloads = {
    check: (rules: RuleSet) => checkRules(rules),
    onReload: () => {
      reportLoad('success');
      log.line('info', 'rules reloaded', { rules: source });
    },
    onError: (error: unknown) => {
      reportLoad('error');
      log.line('error', 'rules not reloaded; keeping the last good set', { rules: source, error: messageOf(error) });
    },
  };
  let watcher: RulesWatcher | undefined;
  let redis: RedisConnection | undefined;
  let tlsWatch: TlsWatch | undefined;
  // Both at once: a reload waiting on a Redis that stalled with its connection open ends when
  // the connection does (at most 1 s later), where closing the watcher first waited for it for
  // good. On a Redis that answers, QUIT follows the reload's read on the connection.
  const release = async (): Promise<void> => {
    tlsWatch?.close();
    // Settled both: one failing to close must not leave the other unawaited.
    const closed = await Promise.allSettled([watcher?.close(), redis?.close()]);
    const failed = closed.find((result) => result.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
  };
  try {
    // Unusable certificates stop start-up before anything else is opened.
    const tls = flags.tls === undefined ? undefined : await serveTls(flags.tls);
    const { rules } = flags;
    if ('path' in rules) watcher = watchRules(rules.path, reloads);
    redis = flags.redis === undefined ? undefined : await connectRedis(flags.redis, log);
    if ('redisKey' in rules) watcher = await watchRulesIn(redis, rules.redisKey, reloads);
    // One of the two ran: the rules come from a path or from a key.
    const current = watcher as RulesWatcher;
    const store: RateLimitStore | undefined = redis?.store;
    const server = createDecisionServer({
      rules: current,
      ...(store === undefined ? {} : { store }),
      grpcPort: flags.grpcPort,
      httpPort: flags.httpPort,
      host: flags.host,
      ...(tls === undefined ? {} : { grpcCredentials: tls.credentials }),
      headers: flags.headers === undefined ? false : { standard: flags.headers },
      storeTimeoutMs: flags.storeTimeoutMs,
      requestTimeoutMs: flags.requestTimeoutMs,
      grpcIdleTimeoutMs: flags.grpcIdleTimeoutMs,
      failureModeDeny: flags.failureModeDeny,
      shadowMode: flags.shadowMode,
      log,
    });
    reportLoad = server.countRulesLoad;
    checkRules = server.checkRules;
    reportLoad('success');
    for (const result of early) reportLoad(result);
    log.line('info', 'rules loaded', { rules: source, domains: current.current.domains });
    const unread = 'path' in rules ? ignoredRuleFiles(rules.path) : [];
    if (unread.length > 0)
      log.line('warn', 'files under --rules not read: only .yaml, .yml and .json files hold rules', { files: unread });
    if (tls !== undefined) {
      log.line('info', 'gRPC over TLS', tls.described);
      tlsWatch = tls.watch(log, { intervalMs: TLS_CHECK_INTERVAL_MS });
    }
    redis?.watch((up) => server.setServing(up));
    const ports = await server.listen();
    return {
      ...ports,
      async stop() {
        await server.close();
        await release();
      },
    };
  } catch (error) {
    await release();
    throw error;
  }
}

/** The rules in the service's Redis (`--rules-key`), kept current as `publishRules` changes them. */
function watchRulesIn(redis: RedisConnection | undefined, key: string, reloads: ReloadOptions): Promise<RulesWatcher> {
  if (redis === undefined) invalidOption('--rules-key', key, 'given with --redis or --redis-cluster');
  return watchRedisRules({ client: redis.rules, key, ...reloads });
}
