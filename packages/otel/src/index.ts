export type { CountedStore, LocalFirstCountedStore, MetricsOptions } from './metrics.js';
export { enableMetrics } from './metrics.js';
export { ATTRIBUTES, METRICS } from './names.js';
export { NEAR_LIMIT_RATIO } from './tally.js';
export { enableTracing, LIMITED_EVENT } from './tracing.js';
