import { checkOptionNames, SluiceError } from '@sluice/core';
import type { MetricsOptions } from './metrics.js';

type Caller = 'enableMetrics' | 'createPrometheusMetrics' | 'enableTracing';

const OPTION_NAMES: Record<Caller, readonly string[]> = {
  enableMetrics: ['meterProvider', 'memoryStores', 'localFirstStores', 'logger'],
  // It reports on a provider of its own: a `meterProvider` given would be dropped unseen.
  createPrometheusMetrics: ['memoryStores', 'localFirstStores', 'logger'],
  enableTracing: [],
};

/** Throws the coded error for an option of `caller` that has the wrong type. */
function invalid(caller: Caller, option: string, value: unknown, expected: string): never {
  const received =
    value === null ? 'null' : Array.isArray(value) ? 'an array' : value instanceof Map ? 'a Map' : typeof value;
  throw new SluiceError(
    'ERR_SLUICE_INVALID_OPTION',
    `[sluice] Option \`${option}\` of ${caller} must be ${expected}; received ${received}.`,
  );
}

/** Whether `value` is an object literal (or one without a prototype), not a Map or other class's instance. */
const isPlainObject = (value: unknown): value is object => {
  if (typeof value !== 'object' || value === null) return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
};

/**
 * Checks that the options of `caller` are a plain object naming only options it takes: a Map's
 * entries, read as properties, would be no options at all.
 */
export function checkOptions(options: object, caller: Caller): void {
  if (!isPlainObject(options)) invalid(caller, 'options', options, 'a plain object');
  if (caller === 'createPrometheusMetrics' && Object.hasOwn(options, 'meterProvider')) {
    const others = Object.keys(options).filter(
      (name) => name !== 'meterProvider' && !OPTION_NAMES[caller].includes(name),
    );
    const also = others.length === 0 ? '' : ` Unknown too: ${others.map((name) => `\`${name}\``).join(', ')}.`;
    throw new SluiceError(
      'ERR_SLUICE_UNKNOWN_OPTION',
      `[sluice] Unknown createPrometheusMetrics option \`meterProvider\`: it reports on a meter provider of its own; for yours, call enableMetrics({ meterProvider }).${also}`,
    );
  }
  const names = Object.keys(options).map((name) => `\`${name}\``);
  // A `tracerProvider` given would be dropped unseen, as the spans are whichever are active.
  if (caller === 'enableTracing' && names.length > 0) {
    throw new SluiceError(
      'ERR_SLUICE_UNKNOWN_OPTION',
      `[sluice] Unknown enableTracing ${names.length === 1 ? 'option' : 'options'} ${names.join(', ')}: it takes none, as it adds decisions to the span active around consume, whichever provider made it.`,
    );
  }
  checkOptionNames(options, OPTION_NAMES[caller], caller);
}

/** Checks the options of `caller`, naming it in every error. */
export function checkMetricsOptions(options: MetricsOptions, caller: Caller): MetricsOptions {
  checkOptions(options, caller);
  const { meterProvider, memoryStores, localFirstStores, logger } = options;
  if (meterProvider !== undefined && typeof meterProvider?.getMeter !== 'function')
    invalid(caller, 'meterProvider', meterProvider, 'an OpenTelemetry MeterProvider');
  if (logger !== undefined && typeof logger?.warn !== 'function')
    invalid(caller, 'logger', logger, 'an object with `warn`');
  checkStoresByName(
    caller,
    'memoryStores',
    memoryStores,
    'main',
    'a store from createMemoryStore()',
    (store) => Number.isFinite(store?.size) && Number.isFinite(store.evictions),
  );
  // A Redis store in exact mode has no counts of its own to report: its calls show in
  // `sluice.store.duration` and `sluice.store.errors`.
  checkStoresByName(
    caller,
    'localFirstStores',
    localFirstStores,
    'redis',
    'a store from createRedisStore({ localFirst })',
    (store) => typeof store?.localFirst?.status === 'function',
  );
  return options;
}

/**
 * Checks an option of stores by name: a plain object (read with `Object.entries`, a Map showed
 * no store at all), each value one `isStore` takes.
 */
function checkStoresByName<Store>(
  caller: Caller,
  option: string,
  stores: Readonly<Record<string, Store>> | undefined,
  exampleName: string,
  expected: string,
  isStore: (store: Store) => boolean,
): void {
  if (stores === undefined) return;
  if (!isPlainObject(stores))
    invalid(caller, option, stores, `a plain object of stores by name, such as \`{ ${exampleName}: store }\``);
  for (const [name, store] of Object.entries(stores)) {
    if (!isStore(store)) invalid(caller, `${option}.${name}`, store, expected);
  }
}
