import { checkCallOptions } from './call-options.js';
import { describe, SluiceError } from './errors.js';
import type { RefundOptions, StoreRequest } from './types.js';

/**
 * How long ago, in whole ms by `clockNow` (the limiter's clock, or the host's), the charge a
 * refund's `options` name was made: `undefined` when they name none (charged now). Rounded up:
 * an older charge has refilled more, so the store gives back no more than it holds. Below 0 for
 * a time ahead of the clock, which has stepped back since (`givesNothingBack`).
 */
export function chargeAgeOf(options: unknown, clockNow: number): number | undefined {
  if (options === undefined) return undefined;
  checkCallOptions(options, 'refund', 'chargedAt', '{ chargedAt }');
  const { chargedAt } = options as RefundOptions;
  if (chargedAt === undefined) return undefined;
  if (typeof chargedAt !== 'number' || !Number.isFinite(chargedAt))
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `[sluice] Option \`chargedAt\` of refund must be the time of the charge in epoch ms; received ${describe(chargedAt)}.`,
    );
  return Math.ceil(clockNow - chargedAt);
}

/**
 * A charge dated ahead of the clock, which has stepped back since: how far, and so what the
 * charge still holds, cannot be told, and taken as made now it would give back a later
 * request's units. Nothing is given back.
 */
export const givesNothingBack = (chargeAgeMs: number | undefined): boolean =>
  chargeAgeMs !== undefined && chargeAgeMs < 0;

/**
 * A refund request's `chargeAgeMs`, 0 when it has none (charged now). One that is not a whole
 * number of 0 or more is refused: a negative age would give back a later request's units, a
 * NaN nothing, without a word.
 */
export function chargeAgeMsOf(request: StoreRequest): number {
  const age = request.chargeAgeMs;
  if (age === undefined) return 0;
  if (!Number.isSafeInteger(age) || age < 0)
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `[sluice] A refund's \`chargeAgeMs\` must be a whole number of ms, 0 or more; received ${describe(age)}.`,
    );
  return age;
}

/** When a refund's units were charged, on the clock of `now`, the time the store decides the refund at. */
export const chargedAtOf = (request: StoreRequest, now: number): number => now - chargeAgeMsOf(request);
