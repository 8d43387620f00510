import { checkCallOptions } from './call-options.js';
import { describe, SluiceError } from './errors.js';
import type { RefundOptions, StoreRequest } from './types.js';

/** When a refund's charge was made: at `at` or later, and by `by` (when its decision came back). */
export interface ChargeTime {
  readonly at: number;
  readonly by: number;
}

/**
 * A refund's `options` as the store is to read them: how long ago, in whole ms by `clockNow`
 * (the clock's latest reading), the charge was made at the earliest (`chargeAgeMs`), and how
 * long after that at the latest (`chargeSpanMs`, to `answeredAt`); `undefined` when they name no
 * `chargedAt` (charged now). Rounded outward: an older charge has refilled more, so the store
 * gives back no more than it holds. An age below 0 is a time ahead of the clock, which has
 * stepped back since, or was never the clock's (`givesNothingBack`).
 */
export function chargeAgesOf(
  options: unknown,
  clockNow: number,
): { chargeAgeMs: number; chargeSpanMs: number } | undefined {
  if (options === undefined) return undefined;
  checkCallOptions(options, 'refund', ['chargedAt', 'answeredAt'], '{ chargedAt }');
  const { chargedAt, answeredAt } = options as RefundOptions;
  if (chargedAt === undefined) {
    if (answeredAt !== undefined)
      throw new SluiceError(
        'ERR_SLUICE_INVALID_OPTION',
        '[sluice] Option `answeredAt` of refund closes the span `chargedAt` opens; give both or neither.',
      );
    return undefined;
  }
  checkTime(chargedAt, 'chargedAt', 'the time before the charge was asked for');
  if (answeredAt !== undefined) {
    checkTime(answeredAt, 'answeredAt', 'the time its decision came back');
    if (answeredAt < chargedAt)
      throw new SluiceError(
        'ERR_SLUICE_INVALID_OPTION',
        `[sluice] Option \`answeredAt\` of refund (${answeredAt}) comes before \`chargedAt\` (${chargedAt}): a decision comes back after it is asked for.`,
      );
  }
  const chargeAgeMs = Math.ceil(clockNow - chargedAt);
  if (!Number.isSafeInteger(chargeAgeMs))
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `[sluice] Option \`chargedAt\` of refund (${chargedAt}) lies too far from the clock (${clockNow}) to date a charge.`,
    );
  const answeredAge = answeredAt === undefined ? chargeAgeMs : Math.floor(clockNow - answeredAt);
  // An answer dated ahead of the clock, as a charge so dated, gives nothing back: the span
  // would reach past the refund, to a later request's log entry.
  if (answeredAge < 0) return { chargeAgeMs: answeredAge, chargeSpanMs: 0 };
  return { chargeAgeMs, chargeSpanMs: Math.max(0, chargeAgeMs - answeredAge) };
}

function checkTime(value: unknown, name: string, what: string): void {
  if (typeof value !== 'number' || !Number.isFinite(value))
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `[sluice] Option \`${name}\` of refund must be ${what} in epoch ms; received ${describe(value)}.`,
    );
}

/**
 * A charge dated ahead of the clock, which has stepped back since: how far, and so what the
 * charge still holds, cannot be told, and taken as made now it would give back a later
 * request's units. Nothing is given back.
 */
export const givesNothingBack = (ages: { chargeAgeMs: number } | undefined): boolean =>
  ages !== undefined && ages.chargeAgeMs < 0;

/**
 * A refund request's `chargeAgeMs` and `chargeSpanMs`, 0 when absent (charged now). One that is
 * not a whole number of 0 or more is refused: a negative age would give back a later request's
 * units, a NaN nothing, without a word.
 */
export function chargeAgesMsOf(request: StoreRequest): { age: number; span: number } {
  return { age: wholeMs(request.chargeAgeMs, 'chargeAgeMs'), span: wholeMs(request.chargeSpanMs, 'chargeSpanMs') };
}

function wholeMs(value: number | undefined, name: string): number {
  if (value === undefined) return 0;
  if (!Number.isSafeInteger(value) || value < 0)
    throw new SluiceError(
      'ERR_SLUICE_INVALID_OPTION',
      `[sluice] A refund's \`${name}\` must be a whole number of ms, 0 or more; received ${describe(value)}.`,
    );
  return value;
}

/** When a refund's units were charged, on the clock of `now`, the time the store decides the refund at. */
export function chargeOf(request: StoreRequest, now: number): ChargeTime {
  const { age, span } = chargeAgesMsOf(request);
  return { at: now - age, by: now - age + span };
}
