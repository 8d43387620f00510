import { FIXED_HEADERS, REDIS_ROUND_TRIP } from '../http/apps/app.js';
import { limiters } from '../http/plan.js';
import { ratio } from '../lib/format.js';
import type { RunResults } from '../results.js';
import { findHttp, type HttpRow, pairedRatio } from './http-summary.js';
import { limiterName } from './table.js';
import { above, atLeast, type Spread, type TargetCheck } from './target-check.js';

const withRange = (value: number, min: number, max: number): string => `${ratio(value)} (${ratio(min)}–${ratio(max)})`;

/** A row's ratio to bare with its range over cycles, as the bound or context of a target. */
const shown = (row: HttpRow | undefined): string =>
  row === undefined || !Number.isFinite(row.ratio) ? '–' : withRange(row.ratio, row.ratioMin, row.ratioMax);

/** A paired quotient's median and range, as a bound. */
const spreadShown = (spread: Spread | undefined): string =>
  spread === undefined ? '–' : withRange(spread.median, spread.min, spread.max);

/**
 * The HTTP pass path of each framework: sluice on memory against the fields control and every
 * peer; sluice on Redis (exact) against the INCR control; the 429 path against the pass path.
 * Each is a quotient of two contenders' ratios to bare taken cycle by cycle, so its two sides
 * ran seconds apart; the median and range over cycles are shown.
 */
export function httpTargets(_results: RunResults, http: readonly HttpRow[]): TargetCheck[] {
  const checks: TargetCheck[] = [];
  for (const framework of Object.keys(limiters)) {
    const row = (variant: string, mode: 'pass' | 'deny' = 'pass') => findHttp(http, framework, variant, mode);
    const memory = row('sluice:memory');
    const redis = row('sluice:redis');
    const fields = row(FIXED_HEADERS);
    const incr = row(REDIS_ROUND_TRIP);

    const vsFields = pairedRatio(memory, fields);
    checks.push({
      target: `HTTP ${framework}, pass: sluice memory ÷ the fields alone`,
      value: vsFields?.median,
      spread: vsFields,
      unit: 'ratio',
      goal: '≥ 0.95',
      bound: `fields alone ÷ bare ${shown(fields)}`,
      context: `sluice memory ÷ bare ${shown(memory)}`,
      met: atLeast(vsFields?.median, 0.95),
    });

    const peers = (limiters[framework] ?? [])
      .filter((v) => !v.startsWith('sluice'))
      .map((v) => row(v))
      .filter((r): r is HttpRow => r !== undefined && Number.isFinite(r.ratio));
    const best = peers.sort((a, b) => b.ratio - a.ratio)[0];
    const vsBest = pairedRatio(memory, best);
    // Any limiter that sends the fields costs at least the fields alone: where they alone lose
    // to the best peer (one that sends none), no such limiter can beat it in this run.
    const fieldsVsBest = pairedRatio(fields, best);
    checks.push({
      target: `HTTP ${framework}, pass: sluice memory ÷ the best peer (${best === undefined ? 'none measured' : limiterName(best.variant)})`,
      value: vsBest?.median,
      spread: vsBest,
      unit: 'ratio',
      goal: '> 1.00',
      bound: `fields alone ÷ bare ${shown(fields)}; fields alone ÷ that peer ${spreadShown(fieldsVsBest)}`,
      context: peers.map((p) => `${limiterName(p.variant)} ${shown(p)}`).join('; '),
      met: above(vsBest?.median, 1),
      // Out of reach only if the fields alone lost to that peer in every cycle, not by the median:
      // one noisy cycle must not declare a target unreachable.
      boundMisses: above(fieldsVsBest?.max, 1) === false,
    });

    const vsIncr = pairedRatio(redis, incr);
    checks.push({
      target: `HTTP ${framework}, pass: sluice Redis (exact) ÷ one INCR alone`,
      value: vsIncr?.median,
      spread: vsIncr,
      unit: 'ratio',
      goal: '≥ 1.00',
      bound: `one INCR alone ÷ bare ${shown(incr)}`,
      context: `sluice Redis ÷ bare ${shown(redis)}`,
      met: atLeast(vsIncr?.median, 1),
    });

    for (const variant of ['sluice:memory', 'sluice:redis']) {
      const denied = pairedRatio(row(variant, 'deny'), row(variant));
      checks.push({
        target: `HTTP ${framework}, ${limiterName(variant)}: 429 path ÷ pass path`,
        value: denied?.median,
        spread: denied,
        unit: 'ratio',
        goal: '≥ 1.00',
        bound: '',
        context: `429 path ÷ bare ${shown(row(variant, 'deny'))}`,
        met: atLeast(denied?.median, 1),
      });
    }
  }
  return checks;
}
