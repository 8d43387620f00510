import { cv, median } from '../lib/stats.js';
import type { HttpResult } from '../results.js';

export interface HttpRow {
  framework: string;
  variant: string;
  mode: 'pass' | 'deny';
  rounds: number;
  rps: number;
  minRps: number;
  maxRps: number;
  cv: number;
  /** Median over rounds of rps ÷ the bare framework's rps in the same round (its 200 path). */
  ratio: number;
  p50Ms: number;
  p99Ms: number;
  serverCores: number;
  redisCores: number | undefined;
  /** Server CPU per request above the bare framework's, in µs. */
  addedUs: number;
  worstExpectedShare: number;
  errors: number;
  foreign: number;
  unavailable: string | undefined;
  error: string | undefined;
}

const key = (r: { framework: string; variant: string; mode: string }) => `${r.framework}|${r.variant}|${r.mode}`;
const finite = (values: (number | undefined)[]) =>
  values.filter((v): v is number => v !== undefined && Number.isFinite(v));

/** Medians over rounds, with every ratio taken against the bare framework of the same round. */
export function summariseHttp(results: readonly HttpResult[]): HttpRow[] {
  const bare = new Map<string, number>();
  for (const r of results) {
    if (r.variant === 'bare' && r.rps !== undefined) bare.set(`${r.framework}|${r.round}`, r.rps);
  }
  const groups = new Map<string, HttpResult[]>();
  for (const r of results) groups.set(key(r), [...(groups.get(key(r)) ?? []), r]);
  const rows: HttpRow[] = [];
  for (const group of groups.values()) {
    const first = group[0] as HttpResult;
    const ok = group.filter((r) => r.rps !== undefined);
    const rps = ok.map((r) => r.rps as number);
    const ratios = finite(ok.map((r) => (r.rps as number) / (bare.get(`${r.framework}|${r.round}`) ?? Number.NaN)));
    const usPerReq = (r: HttpResult) => ((r.serverCores ?? 1) * 1e6) / (r.rps as number);
    const bareUs = finite(
      results.filter((b) => b.framework === first.framework && b.variant === 'bare' && b.rps).map(usPerReq),
    );
    rows.push({
      framework: first.framework,
      variant: first.variant,
      mode: first.mode,
      rounds: ok.length,
      rps: median(rps),
      minRps: Math.min(...rps),
      maxRps: Math.max(...rps),
      cv: cv(rps),
      ratio: median(ratios),
      p50Ms: median(finite(ok.map((r) => r.p50Ms))),
      p99Ms: median(finite(ok.map((r) => r.p99Ms))),
      serverCores: median(finite(ok.map((r) => r.serverCores))),
      redisCores: first.variant.endsWith(':redis') ? median(finite(ok.map((r) => r.redisCores))) : undefined,
      addedUs: median(ok.map(usPerReq)) - median(bareUs),
      worstExpectedShare: Math.min(1, ...finite(ok.map((r) => r.expectedShare))),
      errors: ok.reduce((sum, r) => sum + (r.errors ?? 0), 0),
      foreign: Math.max(0, ...group.map((r) => r.foreign)),
      unavailable: first.unavailable,
      error: group.find((r) => r.error !== undefined)?.error,
    });
  }
  return rows;
}

export const findHttp = (
  rows: readonly HttpRow[],
  framework: string,
  variant: string,
  mode: 'pass' | 'deny' = 'pass',
) => rows.find((r) => r.framework === framework && r.variant === variant && r.mode === mode);
