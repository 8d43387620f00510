import type { OverrideUnit, ReportedUnit } from './wire-types.js';

const SECOND = 1000;
const DAY = 86_400 * SECOND;

/** Unit lengths as envoyproxy/ratelimit counts them (a month is 30 days, a year 365). */
const unitMs: Record<Exclude<ReportedUnit, 'UNKNOWN'>, number> = {
  SECOND,
  MINUTE: 60 * SECOND,
  HOUR: 3600 * SECOND,
  DAY,
  WEEK: 7 * DAY,
  MONTH: 30 * DAY,
  YEAR: 365 * DAY,
};

/** The window of a descriptor's `limit` override. */
export const overrideWindowMs = (unit: Exclude<OverrideUnit, 'UNKNOWN'>): number => unitMs[unit];

/**
 * The unit Envoy is told for a policy's window. A sluice window need not be a whole unit
 * (`'10s'`); then the unit is UNKNOWN and `dynamic_metadata` carries the exact figures.
 */
export function reportedUnit(windowMs: number): ReportedUnit {
  for (const [unit, ms] of Object.entries(unitMs)) if (ms === windowMs) return unit as ReportedUnit;
  return 'UNKNOWN';
}
