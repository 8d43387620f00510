import { type HttpContender, usesRedis } from '../http/plan.js';
import { cv, geometricMean, median } from '../lib/stats.js';
import type { HttpResult } from '../results.js';
import { type Spread, spreadOf } from './target-check.js';

export interface HttpRow {
  framework: string;
  variant: string;
  mode: 'pass' | 'deny';
  rounds: number;
  rps: number;
  minRps: number;
  maxRps: number;
  cv: number;
  /**
   * Median over cycles of rps ÷ the bare framework's rps in the neighbouring runs (the mean
   * of the bare runs just before and just after; bare's 200 path).
   */
  ratio: number;
  ratioMin: number;
  ratioMax: number;
  /** Each cycle's ratio, by cycle: `cycleRatio` divides two contenders' ratios of the same cycle. */
  ratios: ReadonlyMap<number, number>;
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

/** rps ÷ the mean of the bare runs either side of it in its framework's sequence, pairs left out. */
function neighbourRatios(results: readonly HttpResult[]): Map<HttpResult, number> {
  const ratios = new Map<HttpResult, number>();
  const byFramework = new Map<string, HttpResult[]>();
  for (const r of results) {
    if (r.rps !== undefined && r.pair === undefined) {
      byFramework.set(r.framework, [...(byFramework.get(r.framework) ?? []), r]);
    }
  }
  for (const runs of byFramework.values()) {
    const sorted = [...runs].sort((a, b) => a.seq - b.seq);
    sorted.forEach((r, i) => {
      if (r.variant === 'bare') return;
      const before = sorted.slice(0, i).findLast((b) => b.variant === 'bare');
      const after = sorted.slice(i + 1).find((b) => b.variant === 'bare');
      const bare = finite([before?.rps, after?.rps]);
      if (bare.length > 0) ratios.set(r, (r.rps as number) / (bare.reduce((a, b) => a + b) / bare.length));
    });
  }
  return ratios;
}

/**
 * Medians over cycles of the runs made alone (a pair's runs share the core: see `pairedRatio`),
 * every ratio taken against the bare framework's neighbouring runs.
 */
export function summariseHttp(results: readonly HttpResult[]): HttpRow[] {
  const neighbours = neighbourRatios(results);
  const groups = new Map<string, HttpResult[]>();
  // Rows in the order of the runs made alone (bare first), which the quick run makes last.
  const inOrder = [...results.filter((r) => r.pair === undefined), ...results.filter((r) => r.pair !== undefined)];
  for (const r of inOrder) groups.set(key(r), [...(groups.get(key(r)) ?? []), r]);
  const rows: HttpRow[] = [];
  for (const group of groups.values()) {
    const first = group[0] as HttpResult;
    const ok = group.filter((r) => r.rps !== undefined && r.pair === undefined);
    // A contender the quick run loads only in pairs has no row of its own.
    if (ok.length === 0 && first.error === undefined && first.unavailable === undefined) continue;
    const rps = ok.map((r) => r.rps as number);
    const ratios = new Map<number, number>();
    for (const r of ok) ratios.set(r.round, first.variant === 'bare' ? 1 : (neighbours.get(r) ?? Number.NaN));
    const ratioList = finite([...ratios.values()]);
    const usPerReq = (r: HttpResult) => ((r.serverCores ?? 1) * 1e6) / (r.rps as number);
    const bareUs = finite(
      results
        .filter((b) => b.framework === first.framework && b.variant === 'bare' && b.rps && b.pair === undefined)
        .map(usPerReq),
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
      ratio: median(ratioList),
      ratioMin: Math.min(...ratioList),
      ratioMax: Math.max(...ratioList),
      ratios,
      p50Ms: median(finite(ok.map((r) => r.p50Ms))),
      p99Ms: median(finite(ok.map((r) => r.p99Ms))),
      serverCores: median(finite(ok.map((r) => r.serverCores))),
      redisCores: usesRedis(first.variant) ? median(finite(ok.map((r) => r.redisCores))) : undefined,
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

/**
 * `a`'s ratio to bare ÷ `b`'s, cycle by cycle (only cycles that measured both alone): for two
 * contenders a pair cannot compare, one that waits on Redis and one that does not (see
 * `pairedRatio`). Its two sides ran seconds apart.
 */
export function cycleRatio(a: HttpRow | undefined, b: HttpRow | undefined): Spread | undefined {
  if (a === undefined || b === undefined) return undefined;
  const quotients: number[] = [];
  for (const [cycle, value] of a.ratios) {
    const other = b.ratios.get(cycle);
    if (other !== undefined) quotients.push(value / other);
  }
  return spreadOf(quotients);
}

const isSide = (r: HttpResult, side: HttpContender) => r.variant === side.variant && r.mode === side.mode;

/**
 * `a` ÷ `b` in requests per server CPU-second, over the pairs that loaded the two at once on
 * one core: each cycle's quotient is the geometric mean of its pairs' (both ways round, so that
 * the load generator's lead on the side it starts first cancels: see `runFramework`), then the
 * median and range over cycles. Undefined where no such pair ran. Only for two servers alike in
 * what they wait on: one that awaits Redis answers each turn's requests in a batch and spends
 * less CPU on each, which its rate, held back by the round trip, does not show.
 */
export function pairedRatio(
  results: readonly HttpResult[],
  framework: string,
  a: HttpContender,
  b: HttpContender,
): Spread | undefined {
  const paired = results.filter((r) => r.framework === framework && r.pair !== undefined && r.rpsPerCpuSec);
  const byCycle = new Map<number, number[]>();
  for (const run of paired.filter((r) => isSide(r, a))) {
    const partner = paired.find((r) => r.pair === run.pair && r !== run && isSide(r, b));
    if (partner === undefined) continue;
    const quotients = byCycle.get(run.round) ?? [];
    quotients.push((run.rpsPerCpuSec as number) / (partner.rpsPerCpuSec as number));
    byCycle.set(run.round, quotients);
  }
  return spreadOf([...byCycle.values()].map(geometricMean));
}

export const findHttp = (
  rows: readonly HttpRow[],
  framework: string,
  variant: string,
  mode: 'pass' | 'deny' = 'pass',
) => rows.find((r) => r.framework === framework && r.variant === variant && r.mode === mode);
