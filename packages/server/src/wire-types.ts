/**
 * `envoy.type.v3.RateLimitUnit` as proto3 JSON names it (a descriptor's `limit` override), in
 * the proto's order: each name's index is its number.
 */
export const OVERRIDE_UNITS = ['UNKNOWN', 'SECOND', 'MINUTE', 'HOUR', 'DAY', 'MONTH', 'YEAR'] as const;
export type OverrideUnit = (typeof OVERRIDE_UNITS)[number];
/** `RateLimitResponse.RateLimit.Unit`, which also has WEEK. */
export type ReportedUnit = OverrideUnit | 'WEEK';
export type Code = 'OK' | 'OVER_LIMIT';
/** The most a uint32 field of Envoy's messages holds (`hits_addend`, `requests_per_unit`, …). */
export const UINT32_MAX = 2 ** 32 - 1;

/** One descriptor of a checked request. */
export interface DescriptorCall {
  entries: readonly { key: string; value: string }[];
  /** Envoy's per-descriptor override of the matched rule's limit. */
  limit?: { requestsPerUnit: number; unit: Exclude<OverrideUnit, 'UNKNOWN'> };
  /** Cost units to charge this descriptor; 0 looks without counting. */
  hits: number;
}

/** A `RateLimitRequest` after validation, whichever front end it came through. */
export interface RateLimitCall {
  domain: string;
  descriptors: readonly DescriptorCall[];
}

export interface DescriptorAnswer {
  code: Code;
  /** Absent when no rule limits the descriptor. */
  currentLimit?: { requestsPerUnit: number; unit: ReportedUnit; name: string };
  limitRemaining: number;
  durationUntilResetMs: number;
  /** sluice's own figures, sent in `dynamic_metadata` since Envoy's status has no field for them. */
  retryAfterMs: number;
  delayMs: number;
  overLimit?: 'soft' | 'elastic' | 'shadow';
}

/** What the service answers, before it is written as protobuf or proto3 JSON. */
export interface RateLimitAnswer {
  overallCode: Code;
  statuses: DescriptorAnswer[];
  /** The IETF RateLimit fields, when the service is asked to send them. */
  responseHeaders: { key: string; value: string }[];
}
