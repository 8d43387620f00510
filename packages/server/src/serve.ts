import type { RateLimitStore } from '@sluice/core';
import { type RulesWatcher, watchRules } from '@sluice/rules';
import type { ServeFlags } from './cli-args.js';
import { createDecisionServer } from './decision-server.js';
import type { ServiceLog } from './log.js';
import { connectRedis, type RedisConnection } from './redis-connection.js';

export interface RunningService {
  grpcPort: number;
  httpPort: number;
  /** Graceful stop: calls in flight finish, then the rules watcher and Redis are closed. */
  stop(): Promise<void>;
}

const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/**
 * `sluice serve`: loads the rules (a bad document stops start-up), connects to Redis when
 * asked (an unreachable one stops start-up), then serves, reloads the rules on change, and
 * reports Redis losses through health while ioredis reconnects.
 */
export async function serve(flags: ServeFlags, log: ServiceLog): Promise<RunningService> {
  let reportLoad: (result: 'success' | 'error') => void = () => {};
  const watcher: RulesWatcher = watchRules(flags.rules, {
    onReload: () => {
      reportLoad('success');
      log.line('info', 'rules reloaded', { rules: flags.rules });
    },
    onError: (error) => {
      reportLoad('error');
      log.line('error', 'rules not reloaded; keeping the last good set', {
        rules: flags.rules,
        error: messageOf(error),
      });
    },
  });
  let redis: RedisConnection | undefined;
  const release = async (): Promise<void> => {
    await watcher.close();
    await redis?.close();
  };
  try {
    redis = flags.redis === undefined ? undefined : await connectRedis(flags.redis, flags.storeTimeoutMs, log);
    const store: RateLimitStore | undefined = redis?.store;
    const server = createDecisionServer({
      rules: watcher,
      ...(store === undefined ? {} : { store }),
      grpcPort: flags.grpcPort,
      httpPort: flags.httpPort,
      host: flags.host,
      headers: flags.headers === undefined ? false : { standard: flags.headers },
      storeTimeoutMs: flags.storeTimeoutMs,
      log,
    });
    reportLoad = server.countRulesLoad;
    reportLoad('success');
    log.line('info', 'rules loaded', { rules: flags.rules, domains: watcher.current.domains });
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
