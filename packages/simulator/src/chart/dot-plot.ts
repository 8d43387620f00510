import { LINE_STYLES, type LineStyle, marker } from './style.js';
import { document, px, text, textWidth } from './svg.js';
import { niceTicks, tickLabel } from './ticks.js';

export interface DotPlotOptions {
  title: string;
  subtitle: string;
  xLabel: string;
  /** One row per category, one value per series (in `series` order). */
  rows: readonly { label: string; values: readonly number[] }[];
  series: readonly string[];
  /** Vertical lines with a label at the top, e.g. the limit. */
  references: readonly { value: number; label: string }[];
}

const WIDTH = 960;
const LEFT = 250;
const RIGHT = 40;
const ROW = 40;

/**
 * One row per category, one marker per series, on a shared x axis. Markers keep the line
 * charts' shapes and colours, so the series read the same in grey-scale; each series sits a
 * little above or below the row's centre so that equal values stay visible.
 */
export function dotPlot(options: DotPlotOptions): string {
  const styles = options.series.map((_, i) => LINE_STYLES[i % LINE_STYLES.length] as LineStyle);
  const legendTop = 64;
  const top = legendTop + 50;
  const bottom = top + options.rows.length * ROW;
  const height = bottom + 56;
  const plotWidth = WIDTH - LEFT - RIGHT;
  const peak = Math.max(...options.rows.flatMap((r) => r.values), ...options.references.map((r) => r.value));
  const ticks = niceTicks(peak * 1.05, 8);
  const max = ticks[ticks.length - 1] as number;
  const x = (value: number) => LEFT + (value / max) * plotWidth;
  const body: string[] = [
    text(18, 28, options.title, 'font-size="18" font-weight="700" fill="#111111"'),
    text(18, 50, options.subtitle, 'fill="#444444"'),
  ];
  let at = 18;
  options.series.forEach((name, i) => {
    body.push(
      marker(styles[i] as LineStyle, at + 6, legendTop + 8),
      text(at + 18, legendTop + 12.5, name, 'fill="#111111"'),
    );
    at += 18 + textWidth(name) + 26;
  });
  for (const t of ticks) {
    body.push(`<line x1="${px(x(t))}" x2="${px(x(t))}" y1="${top}" y2="${bottom}" stroke="#e3e3e3"/>`);
    body.push(text(x(t), bottom + 20, `${tickLabel(t)}×`, 'text-anchor="middle" fill="#333333"'));
  }
  for (const reference of options.references) {
    const rx = x(reference.value);
    body.push(
      `<line x1="${px(rx)}" x2="${px(rx)}" y1="${top - 6}" y2="${bottom}" stroke="#111111" stroke-width="1.4" stroke-dasharray="7 4"/>`,
    );
    body.push(text(rx, top - 10, reference.label, 'text-anchor="middle" fill="#111111" font-weight="700"'));
  }
  options.rows.forEach((row, r) => {
    const cy = top + r * ROW + ROW / 2;
    if (r > 0)
      body.push(`<line x1="18" x2="${WIDTH - RIGHT}" y1="${top + r * ROW}" y2="${top + r * ROW}" stroke="#d0d0d0"/>`);
    body.push(text(LEFT - 12, cy + 4.5, row.label, 'text-anchor="end" fill="#111111"'));
    row.values.forEach((value, i) => {
      const offset = (i - (row.values.length - 1) / 2) * 7;
      body.push(marker(styles[i] as LineStyle, x(value), cy + offset, 6));
    });
  });
  body.push(
    `<rect x="${LEFT}" y="${top}" width="${plotWidth}" height="${bottom - top}" fill="none" stroke="#555555"/>`,
  );
  body.push(text(LEFT + plotWidth / 2, bottom + 44, options.xLabel, 'text-anchor="middle" fill="#111111"'));
  return document(WIDTH, height, options.title, body);
}
