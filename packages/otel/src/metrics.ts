import { type Attributes, createNoopMeter, type MeterProvider, metrics } from '@opentelemetry/api';
import { type Logger, SluiceError } from '@sluice/core';
import { createInstruments } from './instruments.js';
import { ATTRIBUTES } from './names.js';
import { checkMetricsOptions } from './options.js';
import { createCounts, createTally, OVERFLOW, type TallyCounts } from './tally.js';

/** What `enableMetrics` reads from a memory store: `createMemoryStore()` has both. */
export interface CountedStore {
  readonly size: number;
  readonly evictions: number;
}

/** What `enableMetrics` reads from a local-first Redis store: `createRedisStore({ localFirst })` has it. */
export interface LocalFirstCountedStore {
  readonly localFirst?: {
    status(): { readonly clients: number; readonly slotsDown: number; readonly failedCalls: number };
  };
}

export interface MetricsOptions {
  /** @default the global provider (`metrics.getMeterProvider()`): register the SDK first */
  meterProvider?: MeterProvider | undefined;
  /** Memory stores to report the size and evictions of, by the name shown in `sluice.store`. */
  memoryStores?: Readonly<Record<string, CountedStore>> | undefined;
  /** Local-first Redis stores to report the standing with Redis of, by the name shown in `sluice.store`. */
  localFirstStores?: Readonly<Record<string, LocalFirstCountedStore>> | undefined;
  /** Where the warning of a no-op global provider goes. @default console */
  logger?: Logger | undefined;
}

/** Providers metrics are enabled on: two tallies reporting one instrument would hide each other's counts. */
const enabledOn = new WeakSet<MeterProvider>();

/**
 * What each provider has counted, kept when metrics are disabled: the SDK keeps the totals it
 * last read from the observable instruments, so a later `enableMetrics` on the provider must go
 * on from them. Starting again from 0 read as a drop (cumulative) or lost the difference (delta).
 */
const countsOf = new WeakMap<MeterProvider, TallyCounts>();

/** The API's no-op meter, which the global provider hands out until an SDK registers one. */
const NoopMeter = createNoopMeter().constructor;

/**
 * Exports sluice's decisions through OpenTelemetry (SPEC §9). Counts are kept in plain
 * objects and reported by observable instruments when the SDK collects, so a decision pays an
 * increment, not an SDK call; only timed store calls and queue holds record synchronously.
 * Returns `disable()`, which stops counting and observing; enabled again on the same provider,
 * the counts go on from where they stopped, with nothing counted in between. A cumulative
 * reader goes on exporting the last points after it (the SDK keeps every series it reported),
 * a delta reader none.
 *
 * @example
 * const disable = enableMetrics({ meterProvider });
 */
export function enableMetrics(options: MetricsOptions = {}): () => void {
  const {
    meterProvider,
    memoryStores,
    localFirstStores,
    logger = console,
  } = checkMetricsOptions(options, 'enableMetrics');
  const provider = meterProvider ?? metrics.getMeterProvider();
  const meter = provider.getMeter('@sluice/otel');
  // OpenTelemetry's metrics API has no proxy: a meter taken before the SDK registers stays a
  // no-op for good. Counting for it would slow every decision and report nothing.
  if (meter instanceof NoopMeter) {
    logger.warn(
      meterProvider === undefined
        ? '[sluice] WRN_SLUICE_METRICS_NOOP: enableMetrics found no OpenTelemetry SDK (the global MeterProvider is the no-op one), so nothing would be recorded; register the SDK before calling it, or pass `meterProvider`.'
        : "[sluice] WRN_SLUICE_METRICS_NOOP: the `meterProvider` given to enableMetrics hands out no-op meters (it was shut down, or is the API's no-op provider), so nothing would be recorded.",
    );
    return () => {};
  }
  if (enabledOn.has(provider)) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      "[sluice] enableMetrics is already on for this MeterProvider: two would report the same instruments and hide each other's counts; call the disable() it returned first.",
    );
  }
  enabledOn.add(provider);
  let counts = countsOf.get(provider);
  if (counts === undefined) {
    counts = createCounts();
    countsOf.set(provider, counts);
  }

  const { observed, storeDuration, queueDuration } = createInstruments(meter);
  const attributeCache = new Map<string, Attributes>();
  const cached = (key: string, make: () => Attributes): Attributes => {
    let attributes = attributeCache.get(key);
    if (attributes === undefined) {
      attributes = make();
      attributeCache.set(key, attributes);
    }
    return attributes;
  };
  // The counts past the tally's bound are reported as the SDK reports series past its own.
  const limiterAttributes = (limiter: string): Attributes =>
    cached(`l\u0000${limiter}`, () =>
      limiter === OVERFLOW ? { [ATTRIBUTES.overflow]: true } : { [ATTRIBUTES.limiter]: limiter },
    );

  const tally = createTally(
    {
      storeDuration(limiter, store, errorType, ms) {
        const attributes = cached(`d\u0000${limiter}\u0000${store}\u0000${errorType ?? ''}`, () => ({
          ...limiterAttributes(limiter),
          [ATTRIBUTES.store]: store,
          ...(errorType === undefined ? {} : { [ATTRIBUTES.errorType]: errorType }),
        }));
        storeDuration.record(ms / 1000, attributes);
      },
      queueReleased(limiter, { heldMs, completed }) {
        const attributes = cached(`q\u0000${limiter}\u0000${completed}`, () => ({
          ...limiterAttributes(limiter),
          [ATTRIBUTES.queueCompleted]: completed,
        }));
        queueDuration.record(heldMs / 1000, attributes);
      },
    },
    counts,
  );

  const {
    decisions,
    refunds,
    nearLimit,
    storeErrors,
    failOpen,
    queueHeld,
    memoryKeys,
    memoryEvictions,
    localFirstClients,
    localFirstSlotsDown,
    localFirstFailedCalls,
    reloads,
    reloadErrors,
  } = observed;
  const observables = Object.values(observed);

  const collect = (observer: Parameters<Parameters<typeof meter.addBatchObservableCallback>[0]>[0]): void => {
    for (const limiter of tally.limiters()) {
      const byLimiter = limiterAttributes(limiter.limiter);
      observer.observe(queueHeld, limiter.held, byLimiter);
      if (limiter.refunds > 0) observer.observe(refunds, limiter.refunds, byLimiter);
      for (const policy of limiter.policies.values()) {
        const byPolicy = cached(`p\u0000${policy.limiter}\u0000${policy.policy}`, () =>
          policy.policy === OVERFLOW ? byLimiter : { ...byLimiter, [ATTRIBUTES.policy]: policy.policy },
        );
        for (const [result, count] of Object.entries(policy.decisions)) {
          if (count === 0) continue;
          const attributes = cached(`r\u0000${policy.limiter}\u0000${policy.policy}\u0000${result}`, () => ({
            ...byPolicy,
            [ATTRIBUTES.result]: result,
          }));
          observer.observe(decisions, count, attributes);
        }
        observer.observe(nearLimit, policy.nearLimit, byPolicy);
        if (policy.failOpen > 0) observer.observe(failOpen, policy.failOpen, byPolicy);
      }
      for (const { store, errorType, count } of limiter.storeErrors.values()) {
        const attributes = cached(`e\u0000${limiter.limiter}\u0000${store}\u0000${errorType}`, () => ({
          ...byLimiter,
          [ATTRIBUTES.store]: store,
          [ATTRIBUTES.errorType]: errorType,
        }));
        observer.observe(storeErrors, count, attributes);
      }
    }
    for (const [name, store] of Object.entries(memoryStores ?? {})) {
      const attributes = cached(`m\u0000${name}`, () => ({ [ATTRIBUTES.store]: name }));
      observer.observe(memoryKeys, store.size, attributes);
      observer.observe(memoryEvictions, store.evictions, attributes);
    }
    for (const [name, store] of Object.entries(localFirstStores ?? {})) {
      const attributes = cached(`m\u0000${name}`, () => ({ [ATTRIBUTES.store]: name }));
      // Checked at enabling: each store given is in local-first mode.
      const status = store.localFirst?.status();
      if (status === undefined) continue;
      observer.observe(localFirstClients, status.clients, attributes);
      observer.observe(localFirstSlotsDown, status.slotsDown, attributes);
      observer.observe(localFirstFailedCalls, status.failedCalls, attributes);
    }
    for (const { source, applied, rejected } of tally.reloads()) {
      const attributes = cached(`s\u0000${source}`, () => ({ [ATTRIBUTES.rulesSource]: source }));
      observer.observe(reloads, applied, attributes);
      observer.observe(reloadErrors, rejected, attributes);
    }
  };
  meter.addBatchObservableCallback(collect, observables);

  let enabled = true;
  return function disable() {
    if (!enabled) return;
    enabled = false;
    enabledOn.delete(provider);
    tally.close();
    meter.removeBatchObservableCallback(collect, observables);
  };
}
