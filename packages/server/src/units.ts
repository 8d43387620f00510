import { type RateLimitUnit, UNIT_MS } from '@sluice/rules';
import type { OverrideUnit, ReportedUnit } from './wire-types.js';

/**
 * The window of a descriptor's `limit` override, with the unit lengths the rules use
 * (envoyproxy/ratelimit's: a month is 30 days, a year 365).
 */
export const overrideWindowMs = (unit: Exclude<OverrideUnit, 'UNKNOWN'>): number =>
  UNIT_MS[unit.toLowerCase() as RateLimitUnit];

/** Each whole unit's length, looked up once per status rather than searched. */
const unitOfWindow = new Map(
  Object.entries(UNIT_MS).map(([unit, ms]) => [ms, unit.toUpperCase() as ReportedUnit] as const),
);

/**
 * The unit Envoy is told for a policy's window. A sluice window need not be a whole unit
 * (`'10s'`); then the unit is UNKNOWN and `dynamic_metadata` carries the exact figures.
 */
export function reportedUnit(windowMs: number): ReportedUnit {
  return unitOfWindow.get(windowMs) ?? 'UNKNOWN';
}
