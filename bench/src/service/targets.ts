import type { TargetCheck } from '../report/targets.js';
import type { RunResults } from '../results.js';

/** Envoy's default timeout for a rate-limit call. */
const ENVOY_TIMEOUT_US = 20_000;
/** "Far inside" the timeout: a quarter of it. */
const P99_GOAL = 0.25;

/**
 * The decision service's p99 at 100 calls in flight against Envoy's 20 ms default timeout,
 * with the memory store and with Redis; the control's p99 (gRPC and the generator alone) is
 * the context, so a miss shows whether the decision or the harness spent the time.
 */
export function serviceTargets(results: RunResults): TargetCheck[] {
  const rows = results.service ?? [];
  const p99 = (store: string) => rows.find((r) => r.store === store && r.inFlight === 100)?.p99Us;
  const control = p99('control');
  return (['memory', 'redis'] as const).map((store) => {
    const value = p99(store);
    const share = value === undefined ? undefined : value / ENVOY_TIMEOUT_US;
    return {
      target: `service ${store}, 100 calls in flight: p99 ÷ Envoy's 20 ms timeout`,
      value: share,
      unit: 'ratio',
      goal: `≤ ${P99_GOAL}`,
      context: control === undefined ? '' : `control (no decision) p99 ${Math.round(control)} µs`,
      met: share === undefined ? undefined : share <= P99_GOAL,
    };
  });
}
