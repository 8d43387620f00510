import { atMost } from '../report/target-check.js';
import type { TargetCheck } from '../report/targets.js';
import type { RunResults } from '../results.js';

/** Envoy's default timeout for a rate-limit call. */
const ENVOY_TIMEOUT_US = 20_000;
/** "Far inside" the timeout: a quarter of it. */
const P99_GOAL = 0.25;

/**
 * The decision service's p99 at 100 calls in flight against Envoy's 20 ms default timeout,
 * with the memory store and with Redis. The control (gRPC and the generator alone, no decision)
 * bounds it: with a fixed number of calls in flight, a call waits about in-flight ÷ rate, so a
 * generator that cannot send faster queues every server's calls alike, and where the control's
 * own p99 misses the goal no decision service could meet it with this harness on this machine.
 */
export function serviceTargets(results: RunResults): TargetCheck[] {
  const rows = results.service ?? [];
  const p99 = (store: string) => rows.find((r) => r.store === store && r.inFlight === 100)?.p99Us;
  const share = (us: number | undefined) => (us === undefined ? undefined : us / ENVOY_TIMEOUT_US);
  const control = share(p99('control'));
  return (['memory', 'redis'] as const).map((store) => {
    const value = share(p99(store));
    return {
      target: `service ${store}, 100 calls in flight: p99 ÷ Envoy's 20 ms timeout`,
      value,
      unit: 'ratio',
      goal: `≤ ${P99_GOAL}`,
      bound: control === undefined ? '' : `control (no decision): p99 ÷ 20 ms ${control.toFixed(3)}`,
      context: '',
      met: value === undefined ? undefined : value <= P99_GOAL,
      boundMisses: atMost(control, P99_GOAL) === false,
    };
  });
}
