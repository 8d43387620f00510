import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { SLUICE_CHANNELS } from '@sluice/core';

/**
 * Who listens to the decisions of a cell: nobody (the default), a subscriber to
 * `sluice:decision` that does nothing (what any listener costs), or `enableMetrics` on the
 * real OpenTelemetry SDK, collected every 10 s as a Prometheus scrape or OTLP push would.
 */
export type Watcher = 'none' | 'subscriber' | 'metrics';

/** Starts the watcher; returns what stops it. */
export async function watch(watcher: Watcher): Promise<() => Promise<void>> {
  if (watcher === 'subscriber') {
    const ignore = () => {};
    subscribe(SLUICE_CHANNELS.decision, ignore);
    return async () => {
      unsubscribe(SLUICE_CHANNELS.decision, ignore);
    };
  }
  if (watcher === 'metrics') {
    // Loaded here: the cells nobody watches never load the OpenTelemetry SDK.
    const { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } =
      await import('@opentelemetry/sdk-metrics');
    const { enableMetrics } = await import('@sluice/otel');
    const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
    const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 10_000 });
    const meterProvider = new MeterProvider({ readers: [reader] });
    const disable = enableMetrics({ meterProvider });
    return async () => {
      disable();
      await meterProvider.shutdown();
    };
  }
  return async () => {};
}
