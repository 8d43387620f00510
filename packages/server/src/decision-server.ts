import { messageOf } from '@sluice/core';
import type { CountedStore } from '@sluice/otel';
import type { RuleSet } from '@sluice/rules';
import { createCallHandler } from './call-handler.js';
import { createDecider } from './decider.js';
import { type GrpcListener, listenGrpc } from './grpc-listener.js';
import { createGrpcServer } from './grpc-server.js';
import { createHttpServer } from './http-server.js';
import { createServiceMetrics } from './metrics.js';
import { listRules } from './rules-listing.js';
import { currentRules } from './rules-source.js';
import { checkServerOptions, type DecisionServerOptions } from './server-options.js';
import { settledOrAfter } from './settled-or-after.js';
import { createStoreHealth } from './store-health.js';

export interface DecisionServer {
  /** Binds both ports; resolves with the ports bound (useful with port 0). */
  listen(): Promise<{ grpcPort: number; httpPort: number }>;
  /**
   * Graceful stop: refuses new calls at once, sends NOT_SERVING to health `Watch` streams and
   * ends them, lets calls in flight finish (up to `shutdownTimeoutMs`), then closes both
   * servers, once every call has done with the store (a call whose caller left included). The
   * store and the rules are the caller's.
   */
  close(): Promise<void>;
  /**
   * Reports the store's connection as up or down (`sluice serve` wires it to Redis's): while
   * it is down the service is NOT_SERVING on gRPC health and `/healthcheck`, whatever else.
   */
  setServing(serving: boolean): void;
  /** Counts a rules load (`success` or `error`) in `/metrics`, as a watcher reports it. */
  countRulesLoad(result: 'success' | 'error'): void;
  /**
   * Throws the `RulesError` of a rule set this server could not decide (a rule with more
   * policies than its store takes at once), naming each such rule; a watcher's `check`.
   */
  checkRules(rules: RuleSet): void;
}

/** The store's errors one outage logs, each once: past them, one line says the rest are not. */
const MAX_LOGGED_STORE_ERRORS = 10;

/**
 * The decision service (SPEC §8): Envoy's `RateLimitService` over gRPC and envoyproxy/ratelimit's
 * HTTP endpoints, deciding with sluice's limiters over the rules in force.
 *
 * @example
 * const server = createDecisionServer({ rules: await loadRules('./rules'), grpcPort: 8081 });
 * await server.listen();
 */
export function createDecisionServer(options: DecisionServerOptions): DecisionServer {
  const settings = checkServerOptions(options);
  const { log } = settings;
  // The memory store's size and evictions go to /metrics too.
  const counted = 'evictions' in settings.store ? (settings.store as unknown as CountedStore) : undefined;
  const { decide, giveBack, checkRules } = createDecider({ ...settings, logger: log });
  // A set the store cannot decide fails here, not at every call it matches; before the
  // metrics subscribe, so a server that never started leaves no subscriber counting behind.
  checkRules(currentRules(settings.rules));
  const metrics = createServiceMetrics(counted);
  // The store's own owner may report it down (`setServing`, wired to the Redis connection by
  // `sluice serve`); the service's own evidence is `storeHealth`. Both must say up to serve.
  let reportedUp = true;
  let storeServing = true;
  let closing = false;
  const serving = (): boolean => storeServing && !closing;

  /**
   * The store's errors logged in this outage: callers are told only that the store failed, so
   * the log has each error once (an out-of-memory Redis turned replica shows both), up to
   * `MAX_LOGGED_STORE_ERRORS` of them however many calls fail.
   */
  const loggedErrors = new Set<string>();
  /** An error told apart from others by its words, not its figures (a stall's "sent 154 ms ago"). */
  const kindOf = (why: string): string => why.replace(/\d+/g, '#');
  const logStoreError = (why: string): void => {
    const kind = kindOf(why);
    if (loggedErrors.has(kind) || loggedErrors.size > MAX_LOGGED_STORE_ERRORS) return;
    loggedErrors.add(kind);
    if (loggedErrors.size <= MAX_LOGGED_STORE_ERRORS)
      log.line('warn', 'store call failed', { store: settings.store.name, error: why });
    else
      log.line('warn', 'further store errors not logged until the store answers again', { store: settings.store.name });
  };

  const update = (why?: string): void => {
    const up = storeHealth.up && reportedUp;
    if (up === storeServing) return;
    storeServing = up;
    metrics.storeUp(up);
    grpc.setServing(serving());
    if (up) {
      loggedErrors.clear();
      log.line('info', 'store answers again; serving', { store: settings.store.name });
    } else {
      log.line('warn', 'store unavailable; not serving', { store: settings.store.name, error: why });
      if (why !== undefined) loggedErrors.add(kindOf(why));
    }
  };
  const storeHealth = createStoreHealth({
    store: settings.store,
    storeTimeoutMs: settings.storeTimeoutMs,
    logger: log,
    onChange: update,
  });

  const { handleCall, drained } = createCallHandler(
    { decide: (call) => decide(call, currentRules(settings.rules)), giveBack },
    metrics,
    log,
    (error) => {
      const why = messageOf(error);
      storeHealth.failed(why);
      logStoreError(why);
    },
    settings.failureModeDeny,
  );
  const grpc = createGrpcServer(handleCall, settings);
  const listing = () => listRules(currentRules(settings.rules));
  const http = createHttpServer(handleCall, metrics, listing, serving, () => closing, settings);

  let grpcListener: GrpcListener | undefined;
  const bindGrpc = async (): Promise<number> => {
    grpcListener = await listenGrpc(grpc.server, settings.grpcCredentials, {
      host: settings.host,
      port: settings.grpcPort,
      periodMs: settings.grpcIdleTimeoutMs,
    });
    return grpcListener.port;
  };
  /** Ends gRPC at once: its calls, sessions and every connection, one that never began HTTP/2 too. */
  const forceGrpc = (): void => {
    grpc.server.forceShutdown();
    grpcListener?.destroy();
  };
  const bindHttp = (): Promise<number> =>
    new Promise((resolve, reject) => {
      http.once('error', reject);
      http.listen(settings.httpPort, settings.host, () => {
        http.off('error', reject);
        const address = http.address();
        resolve(typeof address === 'object' && address !== null ? address.port : settings.httpPort);
      });
    });

  const stopGrpc = (): Promise<void> =>
    new Promise((resolve) => {
      grpcListener?.stopAccepting();
      const timer = setTimeout(forceGrpc, settings.shutdownTimeoutMs);
      grpc.server.tryShutdown(() => {
        clearTimeout(timer);
        // Every session has ended; a socket whose client kept its side open has not.
        grpcListener?.destroy();
        resolve();
      });
    });
  const stopHttp = (): Promise<void> =>
    new Promise((resolve) => {
      if (!http.listening) return resolve();
      const timer = setTimeout(() => http.closeAllConnections(), settings.shutdownTimeoutMs);
      http.close(() => {
        clearTimeout(timer);
        resolve();
      });
      http.closeIdleConnections();
      http.closeUnusedConnections();
    });

  const bind = async (): Promise<{ grpcPort: number; httpPort: number }> => {
    const grpcPort = await bindGrpc();
    let httpPort: number;
    try {
      httpPort = await bindHttp();
    } catch (error) {
      forceGrpc();
      throw error;
    }
    log.line('info', 'listening', { grpcPort, httpPort, host: settings.host, store: settings.store.name });
    return { grpcPort, httpPort };
  };
  // One binding per server: a second `listen()` gets the first's, where binding again failed
  // on the taken HTTP port and its undoing shut the running gRPC server down.
  let listening: Promise<{ grpcPort: number; httpPort: number }> | undefined;

  let stopped: Promise<void> | undefined;
  const stop = async (): Promise<void> => {
    closing = true;
    const deadline = Date.now() + settings.shutdownTimeoutMs;
    // A `listen()` under way binds first, so that what it binds is closed with the rest
    // rather than left serving after `close()` returned.
    await listening?.catch(() => undefined);
    storeHealth.close();
    grpc.setServing(false);
    // Watch streams never end on their own: tryShutdown would wait for them.
    grpc.endWatches();
    log.line('info', 'shutting down: finishing calls in flight');
    await Promise.all([stopGrpc(), stopHttp()]);
    // Calls whose callers left hold no stream open: their decisions and refunds end here,
    // before the caller closes the store, within the same `shutdownTimeoutMs` (a store call's
    // own bound, `storeTimeoutMs`, may be longer). Past it, closing the store ends them.
    await settledOrAfter(drained(), deadline - Date.now());
    await metrics.close();
    log.line('info', 'stopped');
  };

  return {
    listen() {
      listening ??= bind();
      return listening;
    },
    close() {
      // Every caller waits for the one shutdown: a second caller told at once that the server
      // had stopped would close the store under calls still in flight.
      stopped ??= stop();
      return stopped;
    },
    setServing(up) {
      reportedUp = up;
      update();
    },
    countRulesLoad: metrics.configLoad,
    checkRules,
  };
}
