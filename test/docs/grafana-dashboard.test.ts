import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

interface Variable {
  name: string;
  includeAll?: boolean;
  allValue?: string;
}
const dashboard = JSON.parse(readFileSync(new URL('../../docs/grafana-dashboard.json', import.meta.url), 'utf8')) as {
  templating: { list: Variable[] };
  panels: { title: string; targets?: { expr: string }[] }[];
};
const limiter = dashboard.templating.list.find((v) => v.name === 'limiter');

/** The selector Grafana puts in `sluice_limiter=~"$limiter"` for "All": its `allValue`, else every value it knows joined. */
const allSelector = (known: string[]) => limiter?.allValue ?? `(${known.join('|')})`;

describe('the Grafana dashboard', () => {
  // Past the bound a count is kept under otel_metric_overflow="true", with no sluice_limiter:
  // Grafana's default "All" lists the limiters it knows, which such a series never matches.
  it('with every limiter selected, counts the series that carry no limiter (past the bound)', () => {
    const selector = new RegExp(`^(?:${allSelector(['login', 'api'])})$`);
    // Prometheus reads a missing label as the empty string.
    expect(selector.test('')).toBe(true);
    expect(selector.test('login')).toBe(true);
  });

  it('filters each panel that reads a limiter by the variable', () => {
    const queries = dashboard.panels.flatMap((p) => p.targets ?? []).map((t) => t.expr);
    const byLimiter = queries.filter((q) => q.includes('sluice_limiter'));
    expect(byLimiter.length).toBeGreaterThan(0);
    for (const query of byLimiter) expect(query).toContain('sluice_limiter=~"$limiter"');
  });
});
