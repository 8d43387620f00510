export type { CountingEveryRequest } from './measure/counting-every-request.js';
export { counterErrorCountingEveryRequest } from './measure/counting-every-request.js';
export type { ExactLogComparison } from './measure/exact-log.js';
export { compareWithExactLog } from './measure/exact-log.js';
export type { Buckets, Series } from './measure/series.js';
export {
  admittedSeries,
  costSeries,
  delaySeries,
  maxSeries,
  offeredSeries,
  releasedSeries,
  retryAfterSeries,
} from './measure/series.js';
export type { Totals } from './measure/totals.js';
export { totals } from './measure/totals.js';
export type { WorstWindow } from './measure/window-excess.js';
export { trailingWindowSeries, worstWindow } from './measure/window-excess.js';
export type { SimulatedDecision, SimulatedLimiterOptions, Simulation } from './simulate.js';
export { simulate } from './simulate.js';
export type { Arrival, GeneratorOptions, Traffic } from './traffic/arrival.js';
export { MAX_ARRIVALS, MAX_CLIENTS } from './traffic/arrival.js';
export type { BoundaryAttackOptions } from './traffic/boundary-attack.js';
export { boundaryAttack } from './traffic/boundary-attack.js';
export type { BurstsOptions } from './traffic/bursts.js';
export { bursts } from './traffic/bursts.js';
export type { DiurnalOptions, FlashCrowd } from './traffic/diurnal.js';
export { diurnal } from './traffic/diurnal.js';
export type { HeavyTailedOptions } from './traffic/heavy-tailed.js';
export { heavyTailed } from './traffic/heavy-tailed.js';
export type { SteadyOptions } from './traffic/steady.js';
export { steady } from './traffic/steady.js';
export type { TraceError, TraceFormat, TraceOptions } from './traffic/trace.js';
export { parseTrace, readTrace } from './traffic/trace.js';
