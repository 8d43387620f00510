import type { PhaseResult, Sample } from './load-driver.js';

const columns = [
  'phase',
  'offered/s',
  'sent',
  'served',
  'rejected',
  'served/s',
  'RateLimit (last response)',
  'Retry-After',
];

const perSecond = (count: number, durationMs: number): string => ((count * 1000) / durationMs).toFixed(1);
const header = (sample: Sample | undefined, name: string): string => {
  const value = sample?.headers[name];
  return value === undefined ? '-' : String(value);
};

/** One row per phase: what was offered, what the limiter served and refused, what a client was told. */
export function phaseTable(results: readonly PhaseResult[]): string {
  const rows = results.map((r, i) => {
    const last = [r.lastServed, r.lastRejected].filter((s) => s !== undefined).at(-1);
    return [
      String(i + 1),
      r.offeredPerSecond.toFixed(1),
      String(r.sent),
      String(r.served),
      String(r.rejected + r.failed),
      perSecond(r.served, r.durationMs),
      header(last, 'ratelimit'),
      header(r.lastRejected, 'retry-after'),
    ];
  });
  const widths = columns.map((title, c) => Math.max(title.length, ...rows.map((row) => (row[c] as string).length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, c) => (c >= 6 ? cell.padEnd(widths[c] as number) : cell.padStart(widths[c] as number)))
      .join('  ')
      .trimEnd();
  return [line(columns), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

/** The fields of one response, as a client received them. */
export function describeResponse(title: string, sample: Sample | undefined): string {
  if (sample === undefined) return `${title}: none seen`;
  const names = ['ratelimit-policy', 'ratelimit', 'retry-after', 'content-type'];
  const fields = names
    .filter((name) => sample.headers[name] !== undefined)
    .map((name) => `  ${name}: ${header(sample, name)}`);
  const body = sample.status === 200 ? [] : [`  body: ${sample.body}`];
  return [`${title} (HTTP ${sample.status})`, ...fields, ...body].join('\n');
}
