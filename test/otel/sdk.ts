import {
  AggregationTemporality,
  type DataPoint,
  InMemoryMetricExporter,
  MeterProvider,
  type MetricData,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';

/**
 * The real metrics SDK with an in-memory exporter: `collect()` exports now and returns what
 * the SDK would send. The export interval is an hour: nothing exports unless asked.
 * `cardinalityLimit` replaces the SDK's 2,000 series per instrument.
 */
export function sdkMetrics(cardinalityLimit?: number, temporality = AggregationTemporality.CUMULATIVE) {
  const exporter = new InMemoryMetricExporter(temporality);
  const reader = new PeriodicExportingMetricReader({
    exporter,
    exportIntervalMillis: 3_600_000,
    ...(cardinalityLimit === undefined ? {} : { cardinalityLimits: { default: cardinalityLimit } }),
  });
  const meterProvider = new MeterProvider({ readers: [reader] });
  return {
    meterProvider,
    async collect(): Promise<MetricData[]> {
      await reader.forceFlush();
      const last = exporter.getMetrics().at(-1);
      exporter.reset();
      return last?.scopeMetrics.flatMap((scope) => scope.metrics) ?? [];
    },
    shutdown: () => meterProvider.shutdown(),
  };
}

export type Point = DataPoint<unknown>;

/** The data points of one instrument. */
export const pointsOf = (metrics: readonly MetricData[], name: string): Point[] =>
  (metrics.find((m) => m.descriptor.name === name)?.dataPoints ?? []) as Point[];

/** `[attributes, value]` of each point of a counter or gauge, for comparing whole series. */
export const seriesOf = (metrics: readonly MetricData[], name: string) =>
  pointsOf(metrics, name).map((p) => [p.attributes, p.value]);
