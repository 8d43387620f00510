import { COUNTED_FIELDS, FIXED_HEADERS, REDIS_COUNTED_FIELDS, REDIS_ROUND_TRIP } from '../http/apps/app.js';
import { deny, type HttpContender, isSluice, limiters, pass, usesRedis } from '../http/plan.js';
import type { RunResults } from '../results.js';
import { cycleRatio, findHttp, type HttpRow, pairedRatio } from './http-summary.js';
import { limiterName } from './table.js';
import { above, atLeast, type Spread, spreadShown, type TargetCheck, withRange } from './target-check.js';

/** A row's ratio to bare with its range over cycles (runs made alone), as context. */
const shown = (row: HttpRow | undefined): string =>
  row === undefined || !Number.isFinite(row.ratio) ? '–' : withRange(row.ratio, row.ratioMin, row.ratioMax);

/**
 * The HTTP pass path of each framework: sluice on memory against the fields control and every
 * peer; sluice on Redis (exact) against the INCR control; the 429 path against the pass path.
 * Each reads the pairs that loaded its two sides at once on one core, in requests per server
 * CPU-second, one quotient a cycle (both ways round: see `pairedRatio`), unless one side waits
 * on Redis and the other does not: then the two sides' ratios to bare in the runs made alone,
 * cycle by cycle. The median and range over cycles are shown.
 */
export function httpTargets(results: RunResults, http: readonly HttpRow[]): TargetCheck[] {
  const checks: TargetCheck[] = [];
  for (const framework of Object.keys(limiters)) {
    const row = (variant: string, mode: 'pass' | 'deny' = 'pass') => findHttp(http, framework, variant, mode);
    const paired = (a: HttpContender, b: HttpContender) => pairedRatio(results.http, framework, a, b);

    const vsFields = paired(pass('sluice:memory'), pass(FIXED_HEADERS));
    // A limiter that sends true figures counts each client and writes `r` anew on every
    // request; the floor does only that. Where it alone misses the goal, no such limiter meets it.
    const floorVsFields = paired(pass(COUNTED_FIELDS), pass(FIXED_HEADERS));
    checks.push({
      target: `HTTP ${framework}, pass: sluice memory ÷ the fields alone`,
      value: vsFields?.median,
      spread: vsFields,
      unit: 'ratio',
      goal: '≥ 0.95',
      bound: `the fields counted in a Map ÷ the fields alone ${spreadShown(floorVsFields)}`,
      context: `ratios to bare (runs alone): fields alone ${shown(row(FIXED_HEADERS))}, sluice memory ${shown(row('sluice:memory'))}`,
      met: atLeast(vsFields?.median, 0.95),
      boundMisses: atLeast(floorVsFields?.median, 0.95) === false,
    });

    // Memory peers in pairs; a peer that awaits Redis against sluice's runs made alone, cycle
    // by cycle: a pair's CPU-time quotient cannot compare a server that waits with one that does not.
    const versus = (variant: string, side: string): Spread | undefined =>
      usesRedis(variant) ? cycleRatio(row(side), row(variant)) : paired(pass(side), pass(variant));
    const peers = (limiters[framework] ?? [])
      .filter((v) => !isSluice(v))
      .map((variant) => ({ variant, versus: versus(variant, 'sluice:memory') }))
      .filter((p): p is { variant: string; versus: Spread } => p.versus !== undefined);
    // The peer sluice does worst against is the best peer.
    const best = peers.sort((a, b) => a.versus.median - b.versus.median)[0];
    // A limiter that sends true figures costs at least the counted floor: where the floor's
    // median loses to the best peer (one that sends no fields), a limiter as cheap as the
    // floor would miss this target by the same median, so none can meet it in this run.
    const floorVsBest = best === undefined ? undefined : versus(best.variant, COUNTED_FIELDS);
    checks.push({
      target: `HTTP ${framework}, pass: sluice memory ÷ the best peer (${best === undefined ? 'none measured' : limiterName(best.variant)})`,
      value: best?.versus.median,
      spread: best?.versus,
      unit: 'ratio',
      goal: '> 1.00',
      bound: `the fields counted in a Map ÷ that peer ${spreadShown(floorVsBest)}`,
      context: `sluice memory ÷ ${peers.map((p) => `${limiterName(p.variant)} ${spreadShown(p.versus)}`).join('; ')} (Redis peers from the runs made alone)`,
      met: above(best?.versus.median, 1),
      boundMisses: above(floorVsBest?.median, 1) === false,
    });

    const vsIncr = paired(pass('sluice:redis'), pass(REDIS_ROUND_TRIP));
    // The INCR control sends no fields; a limiter that sends true figures counts and writes them
    // too, and the Redis floor does only that. Where it alone misses the goal, no such limiter meets it.
    const floorVsIncr = paired(pass(REDIS_COUNTED_FIELDS), pass(REDIS_ROUND_TRIP));
    checks.push({
      target: `HTTP ${framework}, pass: sluice Redis (exact) ÷ one INCR alone`,
      value: vsIncr?.median,
      spread: vsIncr,
      unit: 'ratio',
      goal: '≥ 1.00',
      bound: `the fields counted by that INCR ÷ the INCR alone ${spreadShown(floorVsIncr)}`,
      context: `ratios to bare (runs alone): one INCR alone ${shown(row(REDIS_ROUND_TRIP))}, sluice Redis ${shown(row('sluice:redis'))}`,
      met: atLeast(vsIncr?.median, 1),
      boundMisses: atLeast(floorVsIncr?.median, 1) === false,
    });

    for (const variant of ['sluice:memory', 'sluice:redis']) {
      // Refused from the deny cache, the Redis store's 429 path waits on nothing, its pass path
      // on Redis: the two are read from the runs made alone (see `pairedRatio`).
      const denied =
        variant === 'sluice:redis'
          ? cycleRatio(row(variant, 'deny'), row(variant))
          : paired(deny(variant), pass(variant));
      checks.push({
        target: `HTTP ${framework}, ${limiterName(variant)}: 429 path ÷ pass path`,
        value: denied?.median,
        spread: denied,
        unit: 'ratio',
        goal: '≥ 1.00',
        bound: '',
        context: `429 path ÷ bare 200 (runs alone) ${shown(row(variant, 'deny'))}`,
        met: atLeast(denied?.median, 1),
      });
    }
  }
  return checks;
}
