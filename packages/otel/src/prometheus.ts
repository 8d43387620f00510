import { PrometheusExporter, PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { SluiceError } from '@sluice/core';
import { enableMetrics, type MetricsOptions } from './metrics.js';
import { METRICS } from './names.js';
import { checkMetricsOptions } from './options.js';

/** The `Content-Type` of Prometheus's text exposition format. */
export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

export interface PrometheusMetrics {
  /** The figures of `enableMetrics`, now, in Prometheus text: serve it on `/metrics`. */
  render(): Promise<string>;
  readonly contentType: typeof PROMETHEUS_CONTENT_TYPE;
  /** Stops counting and releases the private meter provider. */
  disable(): Promise<void>;
}

/**
 * `enableMetrics` on a private OpenTelemetry meter provider whose only reader renders
 * Prometheus text: the same instruments, under Prometheus's names (`sluice_decisions_total`,
 * `sluice_store_duration_seconds`, …), for a server that answers `/metrics` itself. It
 * opens no port; the app serves `render()` where it likes.
 *
 * @example
 * const prometheus = createPrometheusMetrics();
 * app.get('/metrics', async (_req, res) => res.type(prometheus.contentType).send(await prometheus.render()));
 */
export function createPrometheusMetrics(options: Omit<MetricsOptions, 'meterProvider'> = {}): PrometheusMetrics {
  checkMetricsOptions(options, 'createPrometheusMetrics');
  const exporter = new PrometheusExporter({ preventServerStart: true });
  // Prometheus names carry their unit; the exporter only adds `_total` to counters.
  const views = [METRICS.storeDuration, METRICS.queueDuration].map((name) => ({
    instrumentName: name,
    name: `${name}.seconds`,
  }));
  const meterProvider = new MeterProvider({ readers: [exporter], views });
  const disableMetrics = enableMetrics({ ...options, meterProvider });
  // No `target_info` (the private provider's resource says nothing about the app) and no scope
  // labels: the series are the instruments' own.
  const serializer = new PrometheusSerializer(undefined, undefined, undefined, true, true);
  let disabled: Promise<void> | undefined;
  return {
    contentType: PROMETHEUS_CONTENT_TYPE,
    async render() {
      // The exporter, shut down, rejects with an error of its own that names no cause a
      // scrape route could match on.
      if (disabled !== undefined) {
        throw new SluiceError('ERR_SLUICE_UNSUPPORTED', '[sluice] render() after disable(): these metrics are off.');
      }
      const { resourceMetrics } = await exporter.collect();
      const text = serializer.serialize(resourceMetrics);
      // Before any decision the serializer gives a bare comment: every line of the format ends
      // in a line feed, and text appended after it would join the comment.
      return text.endsWith('\n') ? text : `${text}\n`;
    },
    disable() {
      disabled ??= (async () => {
        disableMetrics();
        await meterProvider.shutdown();
      })();
      return disabled;
    },
  };
}
