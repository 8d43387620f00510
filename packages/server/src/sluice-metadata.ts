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

/**
 * `undefined` when every status is a plain answer (no wait, no queue delay, no overage mark):
 * its figures would all be zero, which the Node client reads from an absent entry anyway, and
 * building and encoding a `google.protobuf.Struct` for them was a third of the service's own
 * CPU per call.
 */
export function sluiceMetadata(
  statuses: readonly DescriptorAnswer[],
): { statuses: SluiceStatusMetadata[] } | undefined {
  if (statuses.every((s) => s.retryAfterMs === 0 && s.delayMs === 0 && s.overLimit === undefined)) return undefined;
  return {
    statuses: statuses.map(({ retryAfterMs, delayMs, overLimit }) =>
      overLimit === undefined ? { retryAfterMs, delayMs } : { retryAfterMs, delayMs, overLimit },
    ),
  };
}
