import type { DescriptorAnswer } from './wire-types.js';

/**
 * sluice's figures that Envoy's `DescriptorStatus` has no field for, one entry per status in
 * `dynamic_metadata.sluice.statuses`: the exact wait before a retry can pass, the queue delay,
 * and the overage mark (`shadow`: refused by the rule but answered OK). The Node client reads
 * them; Envoy keeps them as dynamic metadata under its rate-limit filter's namespace.
 */
export interface SluiceStatusMetadata {
  retryAfterMs: number;
  delayMs: number;
  overLimit?: 'soft' | 'elastic' | 'shadow';
}

export function sluiceMetadata(statuses: readonly DescriptorAnswer[]): { statuses: SluiceStatusMetadata[] } {
  return {
    statuses: statuses.map(({ retryAfterMs, delayMs, overLimit }) =>
      overLimit === undefined ? { retryAfterMs, delayMs } : { retryAfterMs, delayMs, overLimit },
    ),
  };
}
