/** About `count` round tick values (1, 2, 2.5 or 5 × 10^n apart) covering [0, max]. */
export function niceTicks(max: number, count = 5): number[] {
  if (!(max > 0)) return [0, 1];
  const rough = max / count;
  const magnitude = 10 ** Math.floor(Math.log10(rough));
  const step = ([1, 2, 2.5, 5, 10].find((m) => m * magnitude >= rough) ?? 10) * magnitude;
  const ticks: number[] = [];
  for (let i = 0; i * step < max + step * 0.999; i++) ticks.push(Number((i * step).toPrecision(12)));
  return ticks;
}

/** The unit in which to show a span of time on an axis, so tick labels stay short. */
export function timeUnit(spanMs: number): { label: string; ms: number } {
  if (spanMs <= 3 * 1_000) return { label: 'ms', ms: 1 };
  if (spanMs <= 3 * 60_000) return { label: 's', ms: 1_000 };
  if (spanMs <= 3 * 3_600_000) return { label: 'min', ms: 60_000 };
  if (spanMs <= 3 * 86_400_000) return { label: 'h', ms: 3_600_000 };
  if (spanMs <= 3 * YEAR_MS) return { label: 'days', ms: 86_400_000 };
  return { label: 'years', ms: YEAR_MS };
}

/** A Julian year: a trace spanning years is labelled in years of 365.25 days. */
const YEAR_MS = 365.25 * 86_400_000;

/** A number for an axis or a table: thousands separated, at most `digits` decimals. */
export function formatNumber(value: number, digits = 2): string {
  return value.toLocaleString('en-US', { maximumFractionDigits: digits });
}

/**
 * A tick of `niceTicks` as it is, every decimal it has: held to two, ticks 0.005 apart read
 * 0, 0.01, 0.01, 0.02 and ticks of a rate of a few a day all read 0.
 */
export function tickLabel(tick: number): string {
  let digits = 0;
  while (digits < MAX_DIGITS && Number(tick.toFixed(digits)) !== tick) digits++;
  return formatNumber(tick, digits);
}

/** The most decimals `toLocaleString` shows on every engine. */
const MAX_DIGITS = 20;

/**
 * A rate for a label, to three significant digits where it is below 1: a limit of 1 an hour
 * is 0.000278/s, which two decimals showed as 0/s.
 */
export function formatRate(value: number): string {
  return formatNumber(value, Math.min(MAX_DIGITS, Math.max(2, 2 - Math.floor(Math.log10(value)))));
}

/** A count and its noun, in the plural unless it is 1: "1 request", "2 requests". */
export function formatCount(count: number, noun: string): string {
  return `${formatNumber(count)} ${noun}${count === 1 ? '' : 's'}`;
}
