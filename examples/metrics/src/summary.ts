import parsePrometheusTextFormat, { type Family } from 'parse-prometheus-text-format';

const sumOf = (family: Family | undefined, match: (labels: Record<string, string>) => boolean): number =>
  (family?.metrics ?? []).filter((m) => match(m.labels ?? {})).reduce((sum, m) => sum + Number(m.value), 0);

/**
 * The table an operator's dashboard shows, read from Prometheus text the way PromQL would:
 * per limiter and policy, decisions by result, the refused share and the near-limit count.
 */
export function summarize(text: string): string {
  const families = parsePrometheusTextFormat(text);
  const family = (name: string) => families.find((f) => f.name === name);
  const decisions = family('sluice_decisions_total');
  const nearLimit = family('sluice_near_limit_total');
  const pairs = new Set(
    (decisions?.metrics ?? []).map((m) => `${m.labels?.sluice_limiter}/${m.labels?.sluice_policy}`),
  );
  const rows = [...pairs].sort().map((pair) => {
    const [limiter, policy] = pair.split('/');
    const mine = (labels: Record<string, string>) =>
      labels.sluice_limiter === limiter && labels.sluice_policy === policy;
    const total = sumOf(decisions, mine);
    const limited = sumOf(decisions, (l) => mine(l) && l.sluice_result === 'limited');
    const share = total === 0 ? 0 : (100 * limited) / total;
    return [
      pair,
      String(total),
      String(total - limited),
      String(limited),
      `${share.toFixed(0)} %`,
      String(sumOf(nearLimit, mine)),
    ];
  });
  const header = ['limiter/policy', 'decisions', 'passed', 'limited', 'refused', 'near limit'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] as string).length)));
  const line = (cells: string[]) =>
    `  ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] as number) : c.padStart(widths[i] as number))).join('  ')}`;
  const keys = sumOf(family('sluice_memory_keys'), () => true);
  const errors = sumOf(family('sluice_store_errors_total'), () => true);
  return [
    line(header),
    ...rows.map(line),
    '',
    `  memory store: ${keys} client keys tracked, ${sumOf(family('sluice_memory_evictions_total'), () => true)} evicted`,
    `  store errors: ${errors}${errors === 0 ? ' (no fail-open passes)' : ''}`,
  ].join('\n');
}
