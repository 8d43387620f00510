/**
 * The instruments `enableMetrics` creates, by OpenTelemetry name. Prometheus exporters write
 * them with `_` for `.`, a unit suffix and `_total` on counters: `sluice_decisions_total`,
 * `sluice_store_duration_seconds`, … (docs/observability.md lists both).
 */
export const METRICS = {
  decisions: 'sluice.decisions',
  refunds: 'sluice.refunds',
  nearLimit: 'sluice.near_limit',
  storeDuration: 'sluice.store.duration',
  storeErrors: 'sluice.store.errors',
  storeFailOpen: 'sluice.store.fail_open',
  queueHeld: 'sluice.queue.held',
  queueDuration: 'sluice.queue.duration',
  memoryKeys: 'sluice.memory.keys',
  memoryEvictions: 'sluice.memory.evictions',
  localFirstClients: 'sluice.local_first.clients',
  localFirstSlotsDown: 'sluice.local_first.slots_down',
  localFirstFailedCalls: 'sluice.local_first.failed_calls',
  rulesReloads: 'sluice.rules.reloads',
  rulesReloadErrors: 'sluice.rules.reload_errors',
} as const;

/** Attribute names. None of them ever holds a client key, address or user id. */
export const ATTRIBUTES = {
  limiter: 'sluice.limiter',
  policy: 'sluice.policy',
  result: 'sluice.result',
  store: 'sluice.store',
  errorType: 'error.type',
  queueCompleted: 'sluice.queue.completed',
  rulesSource: 'sluice.rules.source',
  /** In place of `limiter` and `policy` on the counts of the limiters past the bound: the SDK's own overflow attribute. */
  overflow: 'otel.metric.overflow',
} as const;
