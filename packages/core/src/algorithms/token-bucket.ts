import type { PolicyOutcome } from '../types.js';
import { type Algorithm, type EvaluateAt, evaluateOf, type Values } from './algorithm.js';
import { drainedTo, meterRefunded, writeCharge } from './meter.js';

/** The decision on the state at `values[at…]`, in place (`Algorithm.evaluateAt`); the algorithm is below. */
const evaluateAt: EvaluateAt = (values, at, fresh, policy, capacity, cost, now, into) => {
  if (policy.refillIntervalMs > 0) {
    evaluateSteppedAt(values, at, fresh, policy.refillAmount, policy.refillIntervalMs, capacity, cost, now, into);
    return;
  }
  const { limit, windowMs } = policy;
  const full = capacity * windowMs;
  const missing = fresh ? 0 : drainedTo(values[at] as number, values[at + 1] as number, limit, now);
  const need = cost * windowMs;
  const tokens = full - missing;
  into.delayMs = 0;
  if (tokens >= need) {
    into.allowed = true;
    into.remaining = Math.floor((tokens - need) / windowMs);
    into.resetAfterMs = Math.ceil((missing + need) / limit);
    into.retryAfterMs = 0;
    writeCharge(values, at, fresh, missing + need, need, now);
    return;
  }
  into.allowed = false;
  into.remaining = Math.max(0, Math.floor(tokens / windowMs));
  into.resetAfterMs = Math.ceil(missing / limit);
  into.retryAfterMs = Math.ceil((need - tokens) / limit);
};

const seed: Algorithm['seed'] = (used, policy, now) =>
  policy.refillIntervalMs > 0 ? [used, now] : [used * policy.windowMs, now];

/**
 * Token bucket. The state records the tokens *missing* from a full bucket, not the tokens
 * left: elastic throttling hands each call its own capacity, and a count of tokens left would
 * mean something different under each (a bucket filled at a high capacity would keep its
 * extra tokens once the capacity drops, and a full bucket would read differently from a
 * fresh one once it rises). Tokens left = capacity − missing.
 *
 * Continuous refill by default: one token is W units and L units come back per ms, so refill
 * is exact with no drift; state `[missing, atMs]` in those units.
 * With `refillIntervalMs`, whole tokens come back `refillAmount` at a time and `refilledAt`
 * advances by whole intervals so partial progress is kept (Smyte's design); state
 * `[missing, refilledAtMs]` in whole tokens.
 */
export const tokenBucket: Algorithm = {
  evaluate: evaluateOf(evaluateAt, 2, seed),

  evaluateAt,

  seed,

  refund(state, policy, _capacity, cost, now, chargedAt, chargedBy) {
    if (state === undefined) return seed(0, policy, now);
    if (policy.refillIntervalMs > 0) {
      const { refillAmount, refillIntervalMs } = policy;
      drainStepped(state[0] as number, state[1] as number, refillAmount, refillIntervalMs, now);
      // The phase's last step (or its beginning, `refilledAt`) after the span the charge was
      // made in: a step since may have filled the bucket but for the charge, whose phase would
      // then have begun again at a later charge, and what the charge still holds cannot be
      // told: nothing is given back. Within the span it may be such a step, or the phase the
      // charge began (the bucket was full), which without it a later charge would have begun:
      // given back, the bucket would keep a phase it would not have had, unless full again.
      const refilledAt = drained[1] as number;
      const held = drained[0] as number;
      if (refilledAt > chargedBy || (refilledAt >= chargedAt && held > cost)) return [held, refilledAt];
      return [Math.max(0, held - cost), refilledAt];
    }
    return meterRefunded(state, policy, cost, now, chargedAt, chargedBy);
  },
};

/** Where `drainStepped` leaves a stepped bucket's state, `[missing, refilledAt]`: read at once. */
const drained = new Float64Array(2);

/**
 * A stepped bucket's state `[missing, refilledAt]` as of `now`, into `drained`: the whole
 * intervals since `refilledAt` refilled, `refilledAt` advanced by them so the progress already
 * made toward the next one is kept. A full bucket stops counting steps: its phase restarts at
 * the next use, exactly as a fresh bucket's does, so a state past its reset time is the same
 * as no state at all.
 */
function drainStepped(missing: number, refilledAt: number, amount: number, intervalMs: number, now: number): void {
  // No steps while the clock stands behind `refilledAt`.
  const steps = Math.max(0, Math.floor((now - refilledAt) / intervalMs));
  const left = missing - steps * amount;
  drained[0] = Math.max(0, left);
  drained[1] = left > 0 ? refilledAt + steps * intervalMs : now;
}

function evaluateSteppedAt(
  values: Values,
  at: number,
  fresh: boolean,
  amount: number,
  intervalMs: number,
  capacity: number,
  cost: number,
  now: number,
  into: PolicyOutcome,
): void {
  let missing = 0;
  let refilledAt = now;
  if (!fresh) {
    drainStepped(values[at] as number, values[at + 1] as number, amount, intervalMs, now);
    missing = drained[0] as number;
    refilledAt = drained[1] as number;
  }
  const tokens = capacity - missing;
  into.delayMs = 0;
  if (tokens >= cost) {
    into.allowed = true;
    into.remaining = tokens - cost;
    into.resetAfterMs = untilFull(missing + cost, refilledAt, amount, intervalMs, now);
    into.retryAfterMs = 0;
    values[at] = missing + cost;
    values[at + 1] = refilledAt;
    return;
  }
  into.allowed = false;
  into.remaining = Math.max(0, tokens);
  into.resetAfterMs = untilFull(missing, refilledAt, amount, intervalMs, now);
  into.retryAfterMs = refilledAt + Math.ceil((cost - tokens) / amount) * intervalMs - now;
}

/** How long until `gone` missing tokens have come back, `amount` each interval from `refilledAt`. */
const untilFull = (gone: number, refilledAt: number, amount: number, intervalMs: number, now: number): number =>
  gone <= 0 ? 0 : refilledAt + Math.ceil(gone / amount) * intervalMs - now;
