import { type Algorithm, type EvaluateAt, evaluateOf, type State } from './algorithm.js';
import { meterInto as meterIntoImport } from './meter.js';

// The meter and `aheadOf` as this module's own constants: optimised code reads one as its value,
// where it loads an imported binding and checks its temporal dead zone on every use (some 6
// instructions), and checks a declared function's binding, which may be assigned, on every call.
const meterInto = meterIntoImport;

/** How far the TAT (`tatMs` and its fraction) lies ahead of `now`, in units of 1/L ms; 0 once it has passed. */
const aheadOf = (tatMs: number, fraction: number, limit: number, now: number): number => {
  if (tatMs < now) return 0;
  return (tatMs - now) * limit + fraction;
};

/** The decision on the state at `values[at…]`, in place (`Algorithm.evaluateAt`); the algorithm is below. */
const evaluateAt: EvaluateAt = (values, at, fresh, policy, capacity, cost, now, into) => {
  const { limit } = policy;
  const ahead = fresh ? 0 : aheadOf(values[at] as number, values[at + 1] as number, limit, now);
  const after = meterInto(into, ahead, policy, capacity, cost);
  if (after < 0) return;
  // Split as `stateAhead` splits it, written out: no array on a decision's path.
  const whole = Math.floor(after / limit);
  values[at] = now + whole;
  values[at + 1] = after - whole * limit;
};

/**
 * The state whose TAT lies `ahead` of `now`, in units of 1/L ms: its whole ms and the rest.
 * The rest is `ahead − whole × L`, exact for figures below 2^53 (see `Algorithm`), not
 * `ahead % L`: V8 computes a remainder of doubles with the x87 `fprem`, which took 5 to 11 ns
 * more than a multiply and a subtract in a loop on the bench's host (for 100 per minute, 8 ns).
 */
const stateAhead = (ahead: number, limit: number, now: number): State => {
  const whole = Math.floor(ahead / limit);
  return [now + whole, ahead - whole * limit];
};

const seed: Algorithm['seed'] = (used, { windowMs, limit }, now) => stateAhead(used * windowMs, limit, now);

/**
 * Generic cell rate algorithm. The emission interval is T = W / L ms, which is rarely whole,
 * so the theoretical arrival time is kept exactly as `tatMs + tatFraction / L`.
 * State: `[tatMs, tatFraction]` with 0 ≤ tatFraction < L.
 *
 * In units of 1/L ms, a cost c advances the TAT by c × W and the tolerance is capacity × W:
 * allowed iff max(TAT, now) + c·T − τ ≤ now (+ maxDelayMs in queue mode).
 */
export const gcra: Algorithm = {
  evaluate: evaluateOf(evaluateAt, 2, seed),

  evaluateAt,

  seed,

  refund(state, policy, capacity, cost, now, chargedAt) {
    const { windowMs, limit } = policy;
    const held = state === undefined ? 0 : aheadOf(state[0] as number, state[1] as number, limit, now);
    // The TAT tells no time of a later charge, so the refund gives back no more than a charge
    // made after this one would have left of it (`stillHeld`). Nor of the last charge, but it
    // lies no further ahead of that than the tolerance and the queue's delay: further ahead of
    // now, the clock has stepped back at least that far since, and that much more has refilled.
    const behind = Math.max(0, held - capacity * windowMs - policy.maxDelayMs * limit);
    const elapsed = (now - chargedAt) * limit + behind;
    return stateAhead(Math.max(0, held - Math.max(0, cost * windowMs - elapsed)), limit, now);
  },
};
