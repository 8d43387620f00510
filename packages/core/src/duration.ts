import { invalid } from './errors.js';

/** A duration as a number of milliseconds or a string such as `'500ms'`, `'1s'`, `'15m'`, `'1h'`, `'1d'`. */
export type Duration = number | `${number}${'ms' | 's' | 'm' | 'h' | 'd'}`;

const unitMs = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const pattern = /^(\d+)(?:\.(\d+))?(ms|s|m|h|d)$/;

/**
 * Turns a duration into whole milliseconds. Throws `ERR_SLUICE_INVALID_DURATION` for anything
 * that is not a positive whole number of milliseconds: time is integer ms everywhere in sluice,
 * so `'1.5ms'` is refused rather than rounded.
 */
export function toMs(value: unknown, option: string): number {
  let ms: number | undefined;
  if (typeof value === 'number') ms = value;
  else if (typeof value === 'string') {
    const match = pattern.exec(value);
    if (match) ms = exactMs(match[1] as string, match[2] ?? '', unitMs[match[3] as keyof typeof unitMs]);
  }
  if (ms === undefined || !Number.isSafeInteger(ms) || ms <= 0) {
    invalid(
      'ERR_SLUICE_INVALID_DURATION',
      option,
      value,
      "a positive whole number of milliseconds or a string such as '500ms', '1s', '1m', '1h' or '1d'",
    );
  }
  return ms;
}

/**
 * `whole.fraction` units of `unit` ms, counted exactly: `undefined` unless a whole number of
 * ms. Read as a double first, `'1.0000000000000001ms'` would have been taken for 1 ms.
 */
function exactMs(whole: string, fraction: string, unit: number): number | undefined {
  const digits = fraction.replace(/0+$/, '');
  const scale = 10n ** BigInt(digits.length);
  const scaled = (BigInt(whole) * scale + BigInt(digits === '' ? '0' : digits)) * BigInt(unit);
  if (scaled % scale !== 0n) return undefined;
  const ms = scaled / scale;
  return ms <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(ms) : undefined;
}

/** Formats milliseconds as the shortest exact duration string, e.g. 60000 → `'1m'`. */
export function formatMs(ms: number): string {
  for (const unit of ['d', 'h', 'm', 's'] as const) {
    if (ms % unitMs[unit] === 0) return `${ms / unitMs[unit]}${unit}`;
  }
  return `${ms}ms`;
}
