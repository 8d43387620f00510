import { neverPasses } from '../decision.js';
import { invalid } from '../errors.js';
import { limiterPolicies } from '../policy.js';
import { largestCapacities, toThrottle } from '../throttle.js';

/*
 * Options each valid alone that together can never work: accepted, they would fail every
 * request or do nothing, so they fail at start-up instead. What is known only per request (a
 * `cost` or `policies` function, a `limit` function, rules) is left to each request.
 */

/**
 * A fixed `cost` that a fixed policy refuses even from a fresh state, at its largest capacity
 * under `throttle`, refuses every request as one that can never pass. Shadow mode never refuses,
 * so it is left alone. Checked on the limiter options before the limiter is made: a limiter
 * made and then thrown away would keep its namespace claimed on the store.
 */
export function checkCostCanPass(cost: number, limiterOptions: Record<string, unknown>): void {
  const policies = limiterPolicies(limiterOptions);
  const capacities = largestCapacities(toThrottle(limiterOptions.throttle), policies);
  if (capacities === undefined) return;
  policies.forEach((policy, i) => {
    const capacity = capacities[i] as number;
    if (!neverPasses(policy, capacity, cost)) return;
    const room = `capacity ${capacity}${policy.maxDelayMs > 0 ? ', plus its queue' : ''}`;
    invalid(
      'ERR_SLUICE_INVALID_COST',
      'cost',
      cost,
      `a cost policy "${policy.name}" can ever grant (${room}); a larger one can never pass, so every request would be refused`,
    );
  });
}

/**
 * Whether any policy the options give has `queue`; `undefined` when the policies are not known
 * yet (a `policies` function's, or rules'). Anything but an array of policies is
 * `createLimiter`'s to report: `true` here.
 */
export function hasQueue(options: Record<string, unknown>): boolean | undefined {
  const { policies } = options;
  if (typeof policies === 'function' || options.rules !== undefined) return undefined;
  const list: unknown[] = policies === undefined ? [options] : Array.isArray(policies) ? policies : [];
  const queued = (p: unknown): boolean => typeof p === 'object' && p !== null && 'queue' in p && p.queue !== undefined;
  return list.length === 0 || list.some(queued);
}

/**
 * `maxQueued` bounds the requests queue mode holds. Given while no policy has `queue`, it bounds
 * nothing: a queue was meant and left out.
 */
export function checkQueueBounded(options: Record<string, unknown>): void {
  if (options.maxQueued === undefined || hasQueue(options) !== false) return;
  invalid(
    'ERR_SLUICE_INVALID_QUEUE',
    'maxQueued',
    options.maxQueued,
    'left out: it bounds the requests queue mode holds, and no policy has `queue`',
  );
}
