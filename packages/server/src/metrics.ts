import type { RuleVerdict } from '@sluice/core';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

export type Transport = 'grpc' | 'http';
export type CallResult = 'ok' | 'over_limit' | 'invalid' | 'unavailable';

/**
 * The service's own figures in Prometheus text (`GET /metrics`), in envoyproxy/ratelimit's
 * vocabulary where it has one (`within_limit`, `over_limit`, `shadow_mode`, config loads).
 * Labels never carry a client key or descriptor value: only bounded sets.
 */
export function createServiceMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'sluice_service_' });
  const calls = new Counter({
    name: 'sluice_service_calls_total',
    help: 'ShouldRateLimit calls answered, by transport and result.',
    labelNames: ['transport', 'result'],
    registers: [registry],
  });
  const descriptors = new Counter({
    name: 'sluice_service_descriptors_total',
    help: 'Limited descriptors decided, by result (within_limit, over_limit, shadow_mode, soft, elastic).',
    labelNames: ['result'],
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

  const resultOf = ({ decision }: RuleVerdict): string => {
    if (decision.overLimit === 'shadow') return 'shadow_mode';
    if (decision.overLimit !== undefined) return decision.overLimit;
    return decision.allowed ? 'within_limit' : 'over_limit';
  };

  return {
    registry,
    /** Starts timing a call; the returned function records its end. */
    start(transport: Transport): (result: CallResult, decided?: readonly RuleVerdict[]) => void {
      inFlight.inc();
      const stop = duration.startTimer({ transport });
      return (result, decided = []) => {
        inFlight.dec();
        stop();
        calls.inc({ transport, result });
        for (const item of decided) descriptors.inc({ result: resultOf(item) });
      };
    },
    configLoad: (result: 'success' | 'error') => reloads.inc({ result }),
    storeUp: (up: boolean) => storeUp.set(up ? 1 : 0),
  };
}

export type ServiceMetrics = ReturnType<typeof createServiceMetrics>;
