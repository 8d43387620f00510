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
