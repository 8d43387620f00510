import type { CountedStore } from '@sluice/otel';
import { createPrometheusMetrics } from '@sluice/otel/prometheus';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

export type Transport = 'grpc' | 'http';
/**
 * `cancelled`: the caller left before the answer; what the call charged was given back.
 * `shadow`: the rules refused the call, answered OK under the service's shadow mode.
 */
export type CallResult = 'ok' | 'over_limit' | 'shadow' | 'invalid' | 'unavailable' | 'internal' | 'cancelled';

let processRegistry: Registry | undefined;

/**
 * The process's figures (CPU, memory, GC, event loop), one set for the whole process:
 * prom-client's default metrics watch GC and the event loop for good, with no way to stop,
 * so a set per service kept every closed service's registry alive (about 20 kB each).
 */
function processMetrics(): Registry {
  if (processRegistry === undefined) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry, prefix: 'sluice_service_' });
  }
  return processRegistry;
}

/**
 * `GET /metrics` in Prometheus text: the decisions of the rules' limiters as `@sluice/otel`
 * exports them from core's events (`sluice_decisions_total` by limiter, policy and result,
 * store latency and errors, …), then the service's own figures (`sluice_service_*`: calls by
 * transport and result, call latency, calls in flight, store up, config loads) and the
 * process's. Labels never carry a client key or descriptor value: only bounded sets.
 */
export function createServiceMetrics(memoryStore: CountedStore | undefined) {
  const decisions = createPrometheusMetrics(memoryStore === undefined ? {} : { memoryStores: { memory: memoryStore } });
  const registry = new Registry();
  const processFigures = processMetrics();
  const calls = new Counter({
    name: 'sluice_service_calls_total',
    help: 'ShouldRateLimit calls, by transport and result (cancelled: the caller left before the answer; shadow: refused by the rules, answered OK under shadow mode; unavailable: the store failed; internal: any other failure).',
    labelNames: ['transport', 'result'],
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'sluice_service_call_duration_seconds',
    help: 'Time to answer a ShouldRateLimit call.',
    labelNames: ['transport'],
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1],
    registers: [registry],
  });
  const reloads = new Counter({
    name: 'sluice_service_config_loads_total',
    help: 'Rules loads, by result (success, error).',
    labelNames: ['result'],
    registers: [registry],
  });
  const storeUp = new Gauge({
    name: 'sluice_service_store_up',
    help: '1 while the store answers, 0 while it does not.',
    registers: [registry],
  });
  storeUp.set(1);
  const inFlight = new Gauge({
    name: 'sluice_service_calls_in_flight',
    help: 'ShouldRateLimit calls being decided.',
    registers: [registry],
  });

  return {
    /** Starts timing a call; the returned function records its end. */
    start(transport: Transport): (result: CallResult) => void {
      inFlight.inc();
      const stop = duration.startTimer({ transport });
      return (result) => {
        inFlight.dec();
        stop();
        calls.inc({ transport, result });
      };
    },
    contentType: registry.contentType,
    async render(): Promise<string> {
      return `${await decisions.render()}${await registry.metrics()}${await processFigures.metrics()}`;
    },
    close: () => decisions.disable(),
    configLoad: (result: 'success' | 'error') => reloads.inc({ result }),
    storeUp: (up: boolean) => storeUp.set(up ? 1 : 0),
  };
}

export type ServiceMetrics = ReturnType<typeof createServiceMetrics>;
