import { type Algorithm, type EvaluateAt, evaluateOf } from './algorithm.js';
import { drainedTo, meterInto, meterRefunded, writeCharge } from './meter.js';

/** The decision on the state at `values[at…]`, in place (`Algorithm.evaluateAt`); the algorithm is below. */
const evaluateAt: EvaluateAt = (values, at, fresh, policy, capacity, cost, now, into) => {
  const level = fresh ? 0 : drainedTo(values[at] as number, values[at + 1] as number, policy.limit, now);
  const after = meterInto(into, level, policy, capacity, cost);
  if (after >= 0) writeCharge(values, at, fresh, after, cost * policy.windowMs, now);
};

const seed: Algorithm['seed'] = (used, policy, now) => [used * policy.windowMs, now];

/**
 * Leaky bucket as a meter (nginx `limit_req` style). One token is W units of water; the
 * bucket drains L units per ms, so every figure stays an integer. State: `[level, lastMs]`.
 * Allowed iff level + cost × W ≤ capacity × W. With a queue, a request may overflow by up to
 * `maxDelayMs` of draining: it is charged now and held until the water below it has drained.
 */
export const leakyBucket: Algorithm = {
  evaluate: evaluateOf(evaluateAt, 2, seed),

  evaluateAt,

  seed,

  refund(state, policy, _capacity, cost, now, chargedAt, chargedBy) {
    if (state === undefined) return seed(0, policy, now);
    return meterRefunded(state, policy, cost, now, chargedAt, chargedBy);
  },
};
