import { dotPlot } from '../chart/dot-plot.js';
import type { ChartLine } from '../chart/line-chart.js';
import { lineChart } from '../chart/line-chart.js';
import { formatCount, formatNumber, formatRate } from '../chart/ticks.js';
import type { Series } from '../measure/series.js';
import { DAY_MS } from '../traffic/arrival.js';
import { QUEUE, type RunResult, type ScenarioResult } from './run-scenario.js';

export interface Chart {
  /** File name, e.g. `bursts-admitted.svg`. */
  file: string;
  /** Alt text and caption. */
  caption: string;
  svg: string;
}

const duration = (ms: number) => {
  for (const [unit, size] of [
    ['d', DAY_MS],
    ['h', 3_600_000],
    ['min', 60_000],
    ['s', 1_000],
  ] as const) {
    if (ms % size === 0) return `${ms / size} ${unit}`;
  }
  return `${ms} ms`;
};

/**
 * Lines whose values are identical are drawn once with their names joined: the three bucket
 * algorithms decide alike (they are one meter), and separate identical lines would hide
 * each other.
 */
function merged(runs: readonly RunResult[], pick: (run: RunResult) => Series | undefined): ChartLine[] {
  const groups: { names: string[]; series: Series; key: string }[] = [];
  for (const run of runs) {
    const series = pick(run);
    if (series === undefined) continue;
    const key = JSON.stringify(series.values);
    const same = groups.find((g) => g.key === key);
    if (same) same.names.push(run.name);
    else groups.push({ names: [run.name], series, key });
  }
  return groups.map((g) => ({ label: g.names.join(' = '), series: g.series }));
}

export function scenarioCharts(result: ScenarioResult): Chart[] {
  const { scenario, buckets, runs } = result;
  const perSecond = 1000 / buckets.bucketMs;
  const limitRate = (scenario.limit * 1000) / scenario.windowMs;
  const policy = `${formatNumber(scenario.limit)} per ${duration(scenario.windowMs)}`;
  const perClient = result.clients > 1 ? ' per client' : '';
  const bucket = duration(buckets.bucketMs);
  const { unit } = result;
  const offered =
    unit === 'requests'
      ? formatCount(result.requests, 'request')
      : `${formatCount(result.requests, 'request')} (${formatNumber(result.cost)} ${unit})`;
  const charts: Chart[] = [];
  const admittedLines: ChartLine[] = [
    {
      label: 'offered',
      series: result.offered,
      kind: 'area',
      scale: perSecond,
    },
    ...merged(runs, (r) => r.admitted).map((l) => ({ ...l, scale: perSecond })),
  ];
  charts.push({
    file: `${scenario.id}-admitted.svg`,
    caption: `${scenario.title}: offered and admitted ${unit} per second, every algorithm, limit ${policy}${perClient}`,
    svg: lineChart({
      title: `${scenario.title}: offered vs admitted`,
      subtitle: `Limit ${policy}${perClient}; ${offered} from ${formatCount(result.clients, 'client')}; averaged over ${bucket}`,
      yLabel: `${unit} per second`,
      lines: admittedLines,
      ...(result.clients === 1
        ? {
            reference: {
              value: limitRate,
              label: `limit ${formatRate(limitRate)}/s`,
            },
          }
        : {}),
      originMs: buckets.startMs,
    }),
  });
  if (scenario.charts.includes('window')) {
    const who = result.clients > 1 ? ` of the busiest client (${result.busiestKey})` : '';
    charts.push({
      file: `${scenario.id}-window.svg`,
      caption: `${scenario.title}: ${unit} admitted in the last ${duration(scenario.windowMs)}${who}, against the limit`,
      svg: lineChart({
        title: `${scenario.title}: admitted in any ${duration(scenario.windowMs)}`,
        subtitle: `${unit === 'requests' ? 'Requests' : 'Cost units'}${who} admitted in the trailing ${duration(scenario.windowMs)}, the most per ${bucket}; above the dashed line is excess over the limit`,
        yLabel: `${unit} in the last ${duration(scenario.windowMs)}`,
        lines: merged(runs, (r) => r.window),
        reference: {
          value: scenario.limit,
          label: `limit ${formatNumber(scenario.limit)}`,
        },
        originMs: buckets.startMs,
      }),
    });
  }
  if (scenario.charts.includes('retry-after')) {
    charts.push({
      file: `${scenario.id}-retry-after.svg`,
      caption: `${scenario.title}: the Retry-After refused requests were given, in seconds`,
      svg: lineChart({
        title: `${scenario.title}: Retry-After told to refused requests`,
        subtitle: `The longest wait given to a refused request in each ${bucket}; gaps where nothing was refused`,
        yLabel: 'Retry-After (s)',
        lines: merged(runs, (r) => r.retryAfter).map((l) => ({
          ...l,
          scale: 1 / 1000,
        })),
        originMs: buckets.startMs,
      }),
    });
  }
  const queue = result.queue;
  if (queue?.delay !== undefined && queue.released !== undefined && result.shapingRefuses !== undefined) {
    const shaping = `gcra ${policy}, burst ${QUEUE.burst}`;
    const maxDelay = duration(QUEUE.maxDelayMs);
    charts.push({
      file: `${scenario.id}-queue-flow.svg`,
      caption: `${scenario.title}: queue mode passes a burst on at the steady rate instead of refusing it`,
      svg: lineChart({
        title: `${scenario.title}: queue mode shapes the outflow`,
        subtitle: `${shaping}: refusing, and with queue: { maxDelayMs: ${QUEUE.maxDelayMs} } holding requests; averaged over ${bucket}`,
        yLabel: `${unit} per second`,
        lines: [
          {
            label: 'offered',
            series: result.offered,
            kind: 'area',
            scale: perSecond,
          },
          {
            label: 'refusing: admitted',
            series: result.shapingRefuses.admitted,
            scale: perSecond,
          },
          {
            label: 'queue: passed on after its delay',
            series: queue.released,
            scale: perSecond,
          },
        ],
        reference: {
          value: limitRate,
          label: `limit ${formatRate(limitRate)}/s`,
        },
        originMs: buckets.startMs,
      }),
    });
    charts.push({
      file: `${scenario.id}-queue-delay.svg`,
      caption: `${scenario.title}: the delay queue mode added to requests, in seconds`,
      svg: lineChart({
        title: `${scenario.title}: delay added by queue mode`,
        subtitle: `${shaping}, queue: { maxDelayMs: ${QUEUE.maxDelayMs} }: the longest hold per ${bucket}; a longer wait is refused`,
        yLabel: 'added delay (s)',
        lines: [
          {
            label: 'delay of requests let through',
            series: queue.delay,
            scale: 1 / 1000,
          },
        ],
        reference: { value: QUEUE.maxDelayMs / 1000, label: `max ${maxDelay}` },
        originMs: buckets.startMs,
      }),
    });
  }
  return charts;
}

/** Every scenario's worst window ÷ limit per algorithm: the excess each one allows, side by side. */
export function worstWindowChart(results: readonly ScenarioResult[]): Chart {
  // The buckets decide alike everywhere; one marker stands for the three.
  const shown = [
    { label: 'fixed-window', name: 'fixed-window' },
    { label: 'sliding-window-log', name: 'sliding-window-log' },
    { label: 'sliding-window-counter', name: 'sliding-window-counter' },
    { label: 'token-bucket = leaky-bucket = gcra', name: 'gcra' },
  ];
  return {
    file: 'worst-window.svg',
    caption: 'The most one client got through in any window, as a multiple of the limit, per algorithm and scenario',
    svg: dotPlot({
      title: 'Worst excess over the limit in any window',
      subtitle: 'The most one client got through in any window of the limit’s length, ÷ the limit (1× = never over)',
      xLabel: 'admitted in the worst window ÷ limit',
      series: shown.map((s) => s.label),
      rows: results.map((r) => ({
        label: r.scenario.title,
        values: shown.map((s) => r.runs.find((run) => run.name === s.name)?.worst.ratio ?? 0),
      })),
      references: [
        { value: 1, label: 'limit' },
        { value: 2, label: '2× limit' },
      ],
    }),
  };
}
