import type { Series } from '../measure/series.js';
import { legendRows } from './legend.js';
import { LINE_STYLES, type LineStyle, marker, OFFERED, strokeAttributes } from './style.js';
import { document, px, text, textWidth, wrapText } from './svg.js';
import { niceTicks, tickLabel, timeUnit } from './ticks.js';

export interface ChartLine {
  label: string;
  series: Series;
  /** `area`: the offered load, a grey area behind the lines. @default 'line' */
  kind?: 'line' | 'area';
  /** Multiplies every value, e.g. `1000 / bucketMs` for a per-second rate. @default 1 */
  scale?: number;
}

export interface LineChartOptions {
  title: string;
  subtitle?: string;
  /** The y axis' quantity with its unit, e.g. `requests per second`. */
  yLabel: string;
  lines: readonly ChartLine[];
  /** A horizontal line such as the limit, labelled at its right end. */
  reference?: { value: number; label: string };
  /** The time shown as 0 on the x axis, epoch ms. */
  originMs: number;
  /** @default 'time since start' */
  xLabel?: string;
}

const WIDTH = 960;
const PLOT_HEIGHT = 300;
/** The title's and subtitle's left edge, and the y axis' title's (rotated) baseline. */
const EDGE = 18;
/** Where the y tick labels may start, clear of the y axis' title. */
const TICKS_FROM = 34;
/** The plot's margins at least; wider where a tick label or the reference label needs it. */
const MIN_LEFT = 78;
const MIN_RIGHT = 112;
const MARKER_SPACING = 84;

/** The plot's place across the chart. */
interface Frame {
  left: number;
  plotWidth: number;
}

/** Lines over time on one shared axis: offered load as a grey area, each line with its own colour, dash and marker. */
export function lineChart(options: LineChartOptions): string {
  const { lines, reference } = options;
  const pointOf = (line: ChartLine, i: number) => {
    const v = line.series.values[i];
    return v === undefined ? undefined : v * (line.scale ?? 1);
  };
  // Loops, not Math.max(...values): spreading a long series overflows the call stack.
  let startMs = Number.POSITIVE_INFINITY;
  let endMs = Number.NEGATIVE_INFINITY;
  let peak = reference?.value ?? 0;
  for (const line of lines) {
    const { series } = line;
    startMs = Math.min(startMs, series.startMs);
    endMs = Math.max(endMs, series.startMs + series.values.length * series.bucketMs);
    for (let i = 0; i < series.values.length; i++) peak = Math.max(peak, pointOf(line, i) ?? 0);
  }
  const yTicks = niceTicks(peak * 1.08);
  const yMax = yTicks[yTicks.length - 1] as number;

  // Measured, not fixed: a tick of 1,250,000,000 or a limit of 0.0000116/s ran off the chart.
  const widestTick = Math.max(...yTicks.map((t) => textWidth(tickLabel(t))));
  const left = Math.max(MIN_LEFT, TICKS_FROM + widestTick + 8);
  const right = Math.max(MIN_RIGHT, reference === undefined ? 0 : textWidth(reference.label) + 16);
  const frame = { left, plotWidth: WIDTH - left - right };
  const styled = assignStyles(lines);
  const legend = legendRows(
    styled.map(({ line, style }) => ({ label: line.label, style, area: line.kind === 'area' })),
    frame.plotWidth,
  );
  const subtitle = options.subtitle ? wrapText(options.subtitle, WIDTH - 2 * EDGE) : [];
  const legendTop = 44 + subtitle.length * 18;
  const top = legendTop + legend.height + 10;
  const bottom = top + PLOT_HEIGHT;
  const height = bottom + 56;
  const x = (ms: number) => left + ((ms - startMs) / (endMs - startMs)) * frame.plotWidth;
  const y = (value: number) => bottom - (value / yMax) * PLOT_HEIGHT;

  const body: string[] = [
    text(EDGE, 28, options.title, 'font-size="18" font-weight="700" fill="#111111"'),
    ...subtitle.map((line, i) => text(EDGE, 50 + i * 18, line, 'fill="#444444"')),
  ];
  body.push(...legend.draw(left, legendTop + 4));
  body.push(...yAxis(yTicks, y, frame, options.yLabel, top, bottom));
  body.push(...xAxis(startMs, endMs, options.originMs, x, frame, bottom, options.xLabel ?? 'time since start'));
  for (const { line } of styled.filter((s) => s.line.kind === 'area')) body.push(area(line, pointOf, x, y, bottom));
  for (const { line, style, index } of styled.filter((s) => s.line.kind !== 'area')) {
    body.push(...drawLine(line, style, index, styled.length, pointOf, x, y));
  }
  if (reference) {
    const ry = y(reference.value);
    body.push(
      `<line x1="${left}" x2="${left + frame.plotWidth}" y1="${px(ry)}" y2="${px(ry)}" stroke="#111111" stroke-width="1.4" stroke-dasharray="7 4"/>`,
    );
    body.push(text(left + frame.plotWidth + 8, ry + 4.5, reference.label, 'fill="#111111" font-weight="700"'));
  }
  body.push(
    `<rect x="${left}" y="${top}" width="${px(frame.plotWidth)}" height="${PLOT_HEIGHT}" fill="none" stroke="#555555"/>`,
  );
  return document(WIDTH, height, options.title, body);
}

interface Styled {
  line: ChartLine;
  style: LineStyle;
  index: number;
}

function assignStyles(lines: readonly ChartLine[]): Styled[] {
  let next = 0;
  return lines.map((line, index) => ({
    line,
    index,
    style:
      line.kind === 'area' ? (LINE_STYLES[0] as LineStyle) : (LINE_STYLES[next++ % LINE_STYLES.length] as LineStyle),
  }));
}

function yAxis(ticks: number[], y: (v: number) => number, frame: Frame, label: string, top: number, bottom: number) {
  const { left, plotWidth } = frame;
  const parts = ticks.map(
    (t) =>
      `<line x1="${left}" x2="${left + plotWidth}" y1="${px(y(t))}" y2="${px(y(t))}" stroke="#e3e3e3"/>` +
      text(left - 8, y(t) + 4.5, tickLabel(t), 'text-anchor="end" fill="#333333"'),
  );
  const middle = (top + bottom) / 2;
  parts.push(
    text(EDGE, middle, label, `text-anchor="middle" fill="#111111" transform="rotate(-90 ${EDGE} ${px(middle)})"`),
  );
  return parts;
}

function xAxis(
  startMs: number,
  endMs: number,
  originMs: number,
  x: (ms: number) => number,
  frame: Frame,
  bottom: number,
  label: string,
) {
  const unit = timeUnit(endMs - originMs);
  const from = (startMs - originMs) / unit.ms;
  const to = (endMs - originMs) / unit.ms;
  const parts = niceTicks(to, 8)
    .filter((t) => t >= from - 1e-9 && t <= to + 1e-9)
    .map((t) => {
      const at = x(originMs + t * unit.ms);
      return `<line x1="${px(at)}" x2="${px(at)}" y1="${bottom}" y2="${bottom + 5}" stroke="#555555"/>${text(at, bottom + 20, tickLabel(t), 'text-anchor="middle" fill="#333333"')}`;
    });
  parts.push(
    text(
      frame.left + frame.plotWidth / 2,
      bottom + 44,
      `${label} (${unit.label})`,
      'text-anchor="middle" fill="#111111"',
    ),
  );
  return parts;
}

type PointOf = (line: ChartLine, i: number) => number | undefined;

/** A step path: each bucket's value held flat across the bucket; gaps where a value is missing. */
function stepPath(line: ChartLine, pointOf: PointOf, x: (ms: number) => number, y: (v: number) => number): string {
  const { startMs, bucketMs, values } = line.series;
  let d = '';
  let open = false;
  values.forEach((_, i) => {
    const v = pointOf(line, i);
    if (v === undefined) {
      open = false;
      return;
    }
    const x0 = x(startMs + i * bucketMs);
    const x1 = x(startMs + (i + 1) * bucketMs);
    d += `${open ? 'V' : `M${px(x0)} `}${px(y(v))}H${px(x1)}`;
    open = true;
  });
  return d;
}

function area(
  line: ChartLine,
  pointOf: PointOf,
  x: (ms: number) => number,
  y: (v: number) => number,
  bottom: number,
): string {
  const { startMs, bucketMs, values } = line.series;
  let d = `M${px(x(startMs))} ${bottom}`;
  for (let i = 0; i < values.length; i++)
    d += `V${px(y(pointOf(line, i) ?? 0))}H${px(x(startMs + (i + 1) * bucketMs))}`;
  return `<path d="${d}V${bottom}Z" fill="${OFFERED.fill}" stroke="${OFFERED.stroke}" stroke-width="1.2"/>`;
}

function drawLine(
  line: ChartLine,
  style: LineStyle,
  index: number,
  count: number,
  pointOf: PointOf,
  x: (ms: number) => number,
  y: (v: number) => number,
): string[] {
  const parts = [`<path d="${stepPath(line, pointOf, x, y)}" ${strokeAttributes(style)}/>`];
  // Markers at regular spacing, staggered per line so that lines drawn on top of each other
  // still show every marker.
  const { startMs, bucketMs, values } = line.series;
  const left = x(startMs);
  const right = x(startMs + values.length * bucketMs);
  for (let at = left + (MARKER_SPACING * (index + 0.5)) / count; at < right; at += MARKER_SPACING) {
    const i = Math.floor(((at - left) / (right - left)) * values.length);
    const v = pointOf(line, i);
    if (v !== undefined) parts.push(marker(style, at, y(v)));
  }
  return parts;
}
