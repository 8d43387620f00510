/** 2.31M, 96.0k, 812: three significant figures with a unit suffix. */
export function rate(value: number | undefined): string {
  if (value === undefined || !Number.isFinite(value)) return '–';
  // Thresholds sit where rounding to three figures would print 1000 of the smaller unit.
  if (value >= 999_500) return `${(value / 1e6).toPrecision(3)}M`;
  if (value >= 999.5) return `${(value / 1e3).toPrecision(3)}k`;
  return value.toPrecision(3);
}

export function ratio(value: number | undefined): string {
  return value === undefined || !Number.isFinite(value) ? '–' : value.toFixed(2);
}

export function fixed(value: number | undefined, digits = 1): string {
  return value === undefined || !Number.isFinite(value) ? '–' : value.toFixed(digits);
}

export function percent(value: number | undefined): string {
  return value === undefined || !Number.isFinite(value) ? '–' : `${(value * 100).toFixed(1)}%`;
}

export function int(value: number | undefined): string {
  return value === undefined || !Number.isFinite(value) ? '–' : Math.round(value).toLocaleString('en-US');
}
