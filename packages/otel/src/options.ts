import { checkOptionNames, SluiceError } from '@sluice/core';
import type { MetricsOptions } from './metrics.js';

type Caller = 'enableMetrics' | 'createPrometheusMetrics';

const OPTION_NAMES: Record<Caller, readonly string[]> = {
  enableMetrics: ['meterProvider', 'memoryStores', 'logger'],
  // It reports on a provider of its own: a `meterProvider` given would be dropped unseen.
  createPrometheusMetrics: ['memoryStores', 'logger'],
};

/** Checks the options of `caller`, naming it in every error. */
export function checkMetricsOptions(options: MetricsOptions, caller: Caller): MetricsOptions {
  const bad = (option: string, value: unknown, expected: string): never => {
    const received = value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value;
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `[sluice] Option \`${option}\` of ${caller} must be ${expected}; received ${received}.`,
    );
  };
  if (typeof options !== 'object' || options === null || Array.isArray(options)) bad('options', options, 'an object');
  if (caller === 'createPrometheusMetrics' && Object.hasOwn(options, 'meterProvider')) {
    throw new SluiceError(
      'ERR_SLUICE_UNKNOWN_OPTION',
      '[sluice] Unknown createPrometheusMetrics option `meterProvider`: it reports on a meter provider of its own; for yours, call enableMetrics({ meterProvider }).',
    );
  }
  checkOptionNames(options, OPTION_NAMES[caller], caller);
  const { meterProvider, memoryStores, logger } = options;
  if (meterProvider !== undefined && typeof meterProvider?.getMeter !== 'function')
    bad('meterProvider', meterProvider, 'an OpenTelemetry MeterProvider');
  if (logger !== undefined && typeof logger?.warn !== 'function') bad('logger', logger, 'an object with `warn`');
  if (memoryStores !== undefined) {
    if (typeof memoryStores !== 'object' || memoryStores === null || Array.isArray(memoryStores))
      bad('memoryStores', memoryStores, 'an object of stores by name');
    for (const [name, store] of Object.entries(memoryStores)) {
      if (typeof store?.size !== 'number' || typeof store.evictions !== 'number')
        bad(`memoryStores.${name}`, store, 'a store from createMemoryStore()');
    }
  }
  return options;
}
