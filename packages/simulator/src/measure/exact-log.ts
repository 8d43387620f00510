import type { SimulatedDecision } from '../simulate.js';
import { checkDecisions } from '../traffic/arrival.js';
import { checkLimit, checkMs } from './checks.js';
import { KeyWindows } from './key-windows.js';

export interface ExactLogComparison {
  decisions: number;
  /** Allowed although the exact window already held `limit` (or would have with this cost). */
  wronglyAllowed: number;
  /** Refused although the exact window had room. */
  wronglyRefused: number;
  /** (wronglyAllowed + wronglyRefused) ÷ decisions. */
  errorRate: number;
}

export const comparison = (decisions: number, wronglyAllowed: number, wronglyRefused: number): ExactLogComparison => ({
  decisions,
  wronglyAllowed,
  wronglyRefused,
  errorRate: decisions > 0 ? (wronglyAllowed + wronglyRefused) / decisions : 0,
});

/**
 * Replays the decisions against the exact rule, on the same history: at each request, would
 * an exact log of what this limiter actually admitted in (now − W, now] have decided the
 * same? The exact sliding log scores zero on its own decisions.
 */
export function compareWithExactLog(
  decisions: readonly SimulatedDecision[],
  limit: number,
  windowMs: number,
): ExactLogComparison {
  checkDecisions(decisions, true);
  checkLimit(limit);
  checkMs(windowMs, 'windowMs');
  const admitted = new KeyWindows(windowMs);
  let wronglyAllowed = 0;
  let wronglyRefused = 0;
  for (const d of decisions) {
    const exactAllows = admitted.sumAt(d.key, d.at) + d.cost <= limit;
    if (d.allowed && !exactAllows) wronglyAllowed++;
    if (!d.allowed && exactAllows) wronglyRefused++;
    if (d.allowed) admitted.add(d.key, d.at, d.cost);
  }
  return comparison(decisions.length, wronglyAllowed, wronglyRefused);
}
