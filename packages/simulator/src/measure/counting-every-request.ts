import { algorithms, type State, toPolicy } from '@sluice/core';
import { checkTraffic, type Traffic } from '../traffic/arrival.js';
import { checkLimit, checkMs } from './checks.js';
import { comparison, type ExactLogComparison } from './exact-log.js';
import { KeyWindows } from './key-windows.js';

export interface CountingEveryRequest extends ExactLogComparison {
  /**
   * Requests whose exact window total (with them) lies within ±10 % of the limit: the only
   * places where an estimate can fall on the other side of the limit from the truth.
   */
  nearLimit: number;
}

/**
 * The sliding window counter scored as Cloudflare scored it, against the real rate of what each
 * source sent: every request counts towards the rate, refused or not, and each request's verdict
 * from core's counter estimate is checked against the exact count of the source's requests in
 * (now − W, now]. This isolates the estimate's error from sluice's rule that refusals spend
 * nothing, which `compareWithExactLog` measures on a real run.
 */
export function counterErrorCountingEveryRequest(
  traffic: Traffic,
  limit: number,
  windowMs: number,
): CountingEveryRequest {
  checkTraffic(traffic);
  checkLimit(limit);
  checkMs(windowMs, 'windowMs');
  // Core's own checks too: limit × window must stay within what the counter computes exactly.
  const policy = toPolicy({ limit, window: windowMs, algorithm: 'sliding-window-counter' }, 'policy');
  const counter = algorithms['sliding-window-counter'];
  // A capacity no key can reach, so that charging always succeeds and every request is counted.
  const everything = traffic.reduce((sum, a) => sum + a.cost, limit);
  const counters = new Map<string, State>();
  const sent = new KeyWindows(windowMs);
  let wronglyAllowed = 0;
  let wronglyRefused = 0;
  let nearLimit = 0;
  for (const { at, key, cost } of traffic) {
    const state = counters.get(key);
    const estimateAllows = counter.evaluate(state, policy, limit, cost, at).allowed;
    counters.set(key, counter.evaluate(state, policy, everything, cost, at).next);
    const total = sent.sumAt(key, at) + cost;
    const exactAllows = total <= limit;
    if (Math.abs(total - limit) * 10 <= limit) nearLimit++;
    if (estimateAllows && !exactAllows) wronglyAllowed++;
    if (!estimateAllows && exactAllows) wronglyRefused++;
    sent.add(key, at, cost);
  }
  return { ...comparison(traffic.length, wronglyAllowed, wronglyRefused), nearLimit };
}
