import { FIXED_HEADERS, REDIS_ROUND_TRIP } from '../http/apps/app.js';
import { isCheapestScript } from '../inproc/cheapest-script-contenders.js';
import { floorLabels } from '../inproc/floor-contenders.js';
import { fixed, rate, ratio } from '../lib/format.js';
import { bytesPerKey, type RunResults } from '../results.js';
import { findHttp, type HttpRow } from './http-summary.js';
import { limiterName } from './table.js';
import { cell } from './target-check.js';

interface Bar {
  label: string;
  value: number | undefined;
  sluice: boolean;
  /** A goal drawn as a tick on this bar's track. */
  goal?: number;
}

interface Panel {
  title: string;
  bars: Bar[];
  format: (value: number) => string;
}

const WIDTH = 960;
const LABEL = 330;
const TRACK = 500;
const ROW = 22;
const xml = (text: string) => text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');

function drawPanel(panel: Panel, top: number): { svg: string; height: number } {
  const known = panel.bars.filter((b) => b.value !== undefined && Number.isFinite(b.value));
  const max = Math.max(...known.map((b) => b.value as number), ...panel.bars.map((b) => b.goal ?? 0), 1e-9);
  const parts = [`<text x="16" y="${top + 18}" class="title">${xml(panel.title)}</text>`];
  panel.bars.forEach((bar, i) => {
    const y = top + 30 + i * ROW;
    parts.push(`<text x="${LABEL - 8}" y="${y + 14}" class="label" text-anchor="end">${xml(bar.label)}</text>`);
    parts.push(`<rect x="${LABEL}" y="${y + 3}" width="${TRACK}" height="${ROW - 6}" class="track"/>`);
    if (bar.value === undefined || !Number.isFinite(bar.value)) {
      parts.push(`<text x="${LABEL + 6}" y="${y + 14}" class="value">not measured</text>`);
    } else {
      const width = Math.max(1, (bar.value / max) * TRACK);
      parts.push(
        `<rect x="${LABEL}" y="${y + 3}" width="${width.toFixed(1)}" height="${ROW - 6}" class="${bar.sluice ? 'sluice' : 'peer'}"/>`,
      );
      parts.push(`<text x="${LABEL + TRACK + 8}" y="${y + 14}" class="value">${xml(panel.format(bar.value))}</text>`);
    }
    if (bar.goal !== undefined) {
      const x = LABEL + (bar.goal / max) * TRACK;
      parts.push(`<line x1="${x.toFixed(1)}" x2="${x.toFixed(1)}" y1="${y}" y2="${y + ROW}" class="goal"/>`);
    }
  });
  return { svg: parts.join('\n'), height: 40 + panel.bars.length * ROW };
}

/**
 * The HTTP goals, drawn on sluice's bars: 0.95 × the fields control's ratio for the memory
 * store, the INCR control's for Redis.
 */
function httpGoal(http: readonly HttpRow[], row: HttpRow): number | undefined {
  const control = (variant: string) => findHttp(http, row.framework, variant)?.ratio;
  if (row.variant === 'sluice:memory') return mul(0.95, control(FIXED_HEADERS));
  if (row.variant === 'sluice:redis') return control(REDIS_ROUND_TRIP);
  return undefined;
}

const mul = (a: number, b: number | undefined) => (b === undefined || !Number.isFinite(b) ? undefined : a * b);

function panels(results: RunResults, http: readonly HttpRow[]): Panel[] {
  const httpBars = http
    .filter((r) => r.mode === 'pass' && r.variant !== 'bare' && r.framework !== 'node')
    .map((r): Bar => {
      const goal = httpGoal(http, r);
      const bar: Bar = {
        label: `${r.framework} · ${limiterName(r.variant)}`,
        value: r.unavailable ? undefined : r.ratio,
        sluice: r.variant.startsWith('sluice'),
      };
      if (goal !== undefined) bar.goal = goal;
      return bar;
    });
  const inprocBars = (store: 'memory' | 'redis', concurrency: number, goalOf?: (id: string) => number | undefined) => {
    // Sorted so that a variant (`…:ap`) sits under its algorithm.
    const ids = [
      ...new Set(
        results.inproc
          // Decisions of one policy only: the rules cell measures a match, which no bar here could
          // be read against, and the cheapest scripts' cells are read against three policies.
          .filter(
            (r) =>
              r.store === store &&
              !r.contender.endsWith(':3p') &&
              !r.contender.startsWith('sluice-rules') &&
              !isCheapestScript(r.contender),
          )
          .map((r) => r.contender),
      ),
    ].sort(
      (a, b) =>
        Number(!a.startsWith('sluice')) - Number(!b.startsWith('sluice')) ||
        (a.startsWith('sluice') ? a.localeCompare(b) : 0),
    );
    return ids
      .map((id) => ({ id, value: cell(results.inproc, id, 100_000, concurrency) }))
      .filter((b) => b.value !== undefined || b.id.startsWith('sluice'))
      .map(({ id, value }) => {
        const bar: Bar = {
          label:
            floorLabels[id] ??
            id
              .replace(/^sluice:(memory|redis):/, 'sluice ')
              .replace(/:ap$/, ' (auto-pipelining)')
              .replace(/:(memory|redis)$/, ''),
          value,
          sluice: id.startsWith('sluice'),
        };
        const goal = goalOf?.(id);
        if (goal !== undefined) bar.goal = goal;
        return bar;
      });
  };
  const lru = cell(results.inproc, 'floor-lru-cache:memory', 100_000, 1);
  const rlfRedis = cell(results.inproc, 'rate-limiter-flexible:redis', 100_000, 100);
  const targeted = (id: string) => id.endsWith(':gcra') || id.endsWith(':sliding-window-counter');
  return [
    {
      title: 'HTTP req/s ÷ bare framework, pass path (median of cycles; tick = target)',
      bars: httpBars,
      format: ratio,
    },
    {
      title: 'Memory store, decisions/s, 100k keys, sequential (tick = 0.9× the lru-cache floor)',
      bars: inprocBars('memory', 1, (id) => (targeted(id) && lru ? 0.9 * lru : undefined)),
      format: (v) => `${rate(v)}/s`,
    },
    {
      title: 'Redis store, decisions/s, 100k keys, 100 in flight (tick = 1.5× rate-limiter-flexible)',
      bars: inprocBars('redis', 100, (id) => (targeted(id) && rlfRedis ? 1.5 * rlfRedis : undefined)),
      format: (v) => `${rate(v)}/s`,
    },
    {
      title: 'Heap + external bytes per tracked key at 1M keys (tick = 96 B target)',
      bars: results.heap.map((h) => ({
        label: h.contender.replace(/^sluice:memory:/, 'sluice ').replace(/:memory$/, ''),
        value: bytesPerKey(h),
        sluice: h.contender.startsWith('sluice'),
        ...(h.contender.startsWith('sluice') ? { goal: 96 } : {}),
      })),
      format: (v) => `${fixed(v, 0)} B`,
    },
  ];
}

/** A self-contained SVG bar chart of the run: sluice in blue, peers in grey, targets as ticks. */
export function renderSvg(results: RunResults, http: readonly HttpRow[]): string {
  let top = 44;
  const drawn = panels(results, http)
    .filter((p) => p.bars.length > 0)
    .map((panel) => {
      const { svg, height } = drawPanel(panel, top);
      top += height + 14;
      return svg;
    });
  const title = `sluice vs peers — ${results.startedAt.slice(0, 10)}${results.quick ? ' (quick run)' : ''}`;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${top}" viewBox="0 0 ${WIDTH} ${top}" font-family="system-ui, sans-serif">
<style>
.title { font-size: 14px; font-weight: 600; fill: #1f2328; }
.heading { font-size: 18px; font-weight: 700; fill: #1f2328; }
.label, .value { font-size: 12px; fill: #1f2328; }
.track { fill: #f2f4f7; }
.sluice { fill: #2f6fdb; }
.peer { fill: #9aa4b2; }
.goal { stroke: #d1242f; stroke-width: 2; }
</style>
<rect width="100%" height="100%" fill="#ffffff"/>
<text x="16" y="28" class="heading">${xml(title)}</text>
<text x="${WIDTH - 16}" y="28" class="label" text-anchor="end">blue: sluice · grey: peers · red tick: target</text>
${drawn.join('\n')}
</svg>
`;
}
