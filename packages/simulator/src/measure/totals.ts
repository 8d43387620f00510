import type { SimulatedDecision } from '../simulate.js';
import { checkDecisions } from '../traffic/arrival.js';

export interface Totals {
  /** Requests offered, admitted and refused. */
  offered: number;
  admitted: number;
  refused: number;
  /** Their cost: what a limit counts, and what `worstWindow` and the series add up. */
  offeredCost: number;
  admittedCost: number;
  refusedCost: number;
  /** Distinct clients refused at least once. */
  refusedClients: number;
  /** Admitted requests that queue mode held back (`delayMs > 0`). */
  delayed: number;
  /** Admitted only because of soft or elastic throttling, or marked by shadow mode as refused. */
  overLimit: number;
  /** Longest `retryAfterMs` any refused request was told, and longest queue delay. */
  maxRetryAfterMs: number;
  maxDelayMs: number;
  /**
   * Refused requests whose cost can never pass (`retryAfterMs: Infinity`): core sends them no
   * `Retry-After`, so they are left out of `maxRetryAfterMs` and counted here.
   */
  neverPass: number;
}

export function totals(decisions: readonly SimulatedDecision[]): Totals {
  checkDecisions(decisions);
  const result: Totals = {
    offered: 0,
    admitted: 0,
    refused: 0,
    offeredCost: 0,
    admittedCost: 0,
    refusedCost: 0,
    refusedClients: 0,
    delayed: 0,
    overLimit: 0,
    maxRetryAfterMs: 0,
    maxDelayMs: 0,
    neverPass: 0,
  };
  const refusedKeys = new Set<string>();
  for (const d of decisions) {
    result.offered++;
    result.offeredCost += d.cost;
    if (d.allowed) {
      result.admitted++;
      result.admittedCost += d.cost;
    } else {
      result.refused++;
      result.refusedCost += d.cost;
      refusedKeys.add(d.key);
    }
    if (d.delayMs > 0) result.delayed++;
    if (d.overLimit !== undefined) result.overLimit++;
    if (Number.isFinite(d.retryAfterMs)) result.maxRetryAfterMs = Math.max(result.maxRetryAfterMs, d.retryAfterMs);
    else result.neverPass++;
    result.maxDelayMs = Math.max(result.maxDelayMs, d.delayMs);
  }
  result.refusedClients = refusedKeys.size;
  return result;
}
