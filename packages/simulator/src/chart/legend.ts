import { type LineStyle, marker, OFFERED, strokeAttributes } from './style.js';
import { px, text, textWidth } from './svg.js';

export interface LegendEntry {
  label: string;
  style: LineStyle;
  /** Drawn as the grey offered-load swatch instead of a line. */
  area: boolean;
}

/** Legend entries laid out in rows that fit `width`: a line sample with its marker, then the label. */
export function legendRows(entries: readonly LegendEntry[], width: number) {
  const items = entries.map((entry) => ({ ...entry, width: 44 + textWidth(entry.label) + 22 }));
  const rows: (typeof items)[] = [[]];
  let used = 0;
  for (const item of items) {
    if (used + item.width > width && (rows[rows.length - 1] as typeof items).length > 0) {
      rows.push([]);
      used = 0;
    }
    (rows[rows.length - 1] as typeof items).push(item);
    used += item.width;
  }
  return {
    height: rows.length * 22,
    draw: (left: number, top: number): string[] =>
      rows.flatMap((row, r) => {
        let at = left;
        const cy = top + r * 22 + 8;
        return row.flatMap((item) => {
          const sample = item.area
            ? [
                `<rect x="${px(at)}" y="${px(cy - 6)}" width="36" height="12" fill="${OFFERED.fill}" stroke="${OFFERED.stroke}"/>`,
              ]
            : [
                `<path d="M${px(at)} ${px(cy)}H${px(at + 36)}" ${strokeAttributes(item.style)}/>`,
                marker(item.style, at + 18, cy),
              ];
          const parts = [...sample, text(at + 44, cy + 4.5, item.label, 'fill="#111111"')];
          at += item.width;
          return parts;
        });
      }),
  };
}
