import type { Meter, Observable } from '@opentelemetry/api';
import { METRICS } from './names.js';

/** Seconds; the store's default timeout is 100 ms. */
const STORE_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];
const QUEUE_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

type Kind = 'counter' | 'updown' | 'gauge';
/** The observable instruments: name, kind, unit and description. */
const OBSERVED = {
  decisions: [METRICS.decisions, 'counter', '{decision}', 'Decisions by limiter, policy and result.'],
  refunds: [
    METRICS.refunds,
    'counter',
    '{refund}',
    'Charges given back after their decision was counted (skipped requests, queued clients that left).',
  ],
  nearLimit: [
    METRICS.nearLimit,
    'counter',
    '{decision}',
    'Allowed or queued decisions that left the policy more than 80 % used (Envoy near_limit).',
  ],
  storeErrors: [METRICS.storeErrors, 'counter', '{error}', 'Failed or timed-out store calls, by error type.'],
  failOpen: [
    METRICS.storeFailOpen,
    'counter',
    '{decision}',
    'Requests let through while the store failed (onStoreError: allow, or shadow mode under any fail policy).',
  ],
  queueHeld: [METRICS.queueHeld, 'updown', '{request}', 'Requests held in a queue now.'],
  memoryKeys: [METRICS.memoryKeys, 'gauge', '{key}', 'Client keys a memory store tracks now.'],
  memoryEvictions: [METRICS.memoryEvictions, 'counter', '{key}', 'Keys a memory store evicted to stay within maxKeys.'],
  localFirstClients: [
    METRICS.localFirstClients,
    'gauge',
    '{client}',
    'Clients whose counts a local-first Redis store keeps in this process now.',
  ],
  localFirstSlotsDown: [
    METRICS.localFirstSlotsDown,
    'gauge',
    '{slot}',
    'Hash slots a local-first Redis store cannot reach now: their clients are held to outageShare.',
  ],
  localFirstFailedCalls: [
    METRICS.localFirstFailedCalls,
    'counter',
    '{call}',
    'Sync and first-read calls of a local-first Redis store that failed or timed out.',
  ],
  reloads: [METRICS.rulesReloads, 'counter', '{reload}', 'Reloads of rules applied.'],
  reloadErrors: [
    METRICS.rulesReloadErrors,
    'counter',
    '{reload}',
    'Reloads of rules rejected (the previous rules stay in force).',
  ],
} as const satisfies Record<string, readonly [string, Kind, string, string]>;

export type Observed = Record<keyof typeof OBSERVED, Observable>;

/** Every instrument `enableMetrics` reports through, on one meter. */
export function createInstruments(meter: Meter) {
  const observed = {} as Observed;
  for (const [key, [name, kind, unit, description]] of Object.entries(OBSERVED)) {
    const options = { description, unit };
    observed[key as keyof Observed] =
      kind === 'counter'
        ? meter.createObservableCounter(name, options)
        : kind === 'updown'
          ? meter.createObservableUpDownCounter(name, options)
          : meter.createObservableGauge(name, options);
  }
  return {
    observed,
    storeDuration: meter.createHistogram(METRICS.storeDuration, {
      description: 'Time a store took to decide, for stores that answer over the network.',
      unit: 's',
      advice: { explicitBucketBoundaries: STORE_BUCKETS },
    }),
    queueDuration: meter.createHistogram(METRICS.queueDuration, {
      description: 'Time a queued request was held before it went on or its client left.',
      unit: 's',
      advice: { explicitBucketBoundaries: QUEUE_BUCKETS },
    }),
  };
}
