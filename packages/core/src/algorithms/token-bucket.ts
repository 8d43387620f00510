import { type Algorithm, ceilDiv, floorDiv } from './algorithm.js';

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
  evaluate(state, policy, capacity, cost, now) {
    return policy.refillIntervalMs > 0
      ? evaluateStepped(state, policy.refillAmount, policy.refillIntervalMs, capacity, cost, now)
      : evaluateContinuous(state, policy.limit, policy.windowMs, capacity, cost, now);
  },

  seed: (used, policy, now) => (policy.refillIntervalMs > 0 ? [used, now] : [used * policy.windowMs, now]),

  refund(state, policy, _capacity, cost, now) {
    if (policy.refillIntervalMs > 0) {
      const [missing, refilledAt] = steppedMissingAt(state, policy.refillAmount, policy.refillIntervalMs, now);
      return [Math.max(0, missing - cost), refilledAt];
    }
    return [Math.max(0, missingAt(state, policy.limit, now) - cost * policy.windowMs), now];
  },
};

function evaluateContinuous(
  state: readonly number[] | undefined,
  limit: number,
  windowMs: number,
  capacity: number,
  cost: number,
  now: number,
) {
  const full = capacity * windowMs;
  const missing = missingAt(state, limit, now);
  const need = cost * windowMs;
  const tokens = full - missing;
  if (tokens >= need) {
    const left = tokens - need;
    return {
      allowed: true,
      remaining: floorDiv(left, windowMs),
      resetAfterMs: ceilDiv(missing + need, limit),
      retryAfterMs: 0,
      delayMs: 0,
      next: [missing + need, now],
    };
  }
  return {
    allowed: false,
    remaining: Math.max(0, floorDiv(tokens, windowMs)),
    resetAfterMs: ceilDiv(missing, limit),
    retryAfterMs: ceilDiv(need - tokens, limit),
    delayMs: 0,
    next: [missing, now],
  };
}

/** Tokens still missing at `now`; a fresh bucket misses none. */
function missingAt(state: readonly number[] | undefined, limit: number, now: number): number {
  if (state === undefined) return 0;
  const missing = state[0] as number;
  const elapsed = now - (state[1] as number);
  if (elapsed <= 0) return missing;
  // Compared before multiplying so the product never leaves the exact integer range.
  return elapsed >= ceilDiv(missing, limit) ? 0 : missing - elapsed * limit;
}

function evaluateStepped(
  state: readonly number[] | undefined,
  amount: number,
  intervalMs: number,
  capacity: number,
  cost: number,
  now: number,
) {
  const [missing, refilledAt] = steppedMissingAt(state, amount, intervalMs, now);
  const untilFull = (gone: number) => (gone <= 0 ? 0 : refilledAt + ceilDiv(gone, amount) * intervalMs - now);
  const tokens = capacity - missing;
  if (tokens >= cost) {
    return {
      allowed: true,
      remaining: tokens - cost,
      resetAfterMs: untilFull(missing + cost),
      retryAfterMs: 0,
      delayMs: 0,
      next: [missing + cost, refilledAt],
    };
  }
  return {
    allowed: false,
    remaining: Math.max(0, tokens),
    resetAfterMs: untilFull(missing),
    retryAfterMs: refilledAt + ceilDiv(cost - tokens, amount) * intervalMs - now,
    delayMs: 0,
    next: [missing, refilledAt],
  };
}

function steppedMissingAt(
  state: readonly number[] | undefined,
  amount: number,
  intervalMs: number,
  now: number,
): [missing: number, refilledAt: number] {
  if (state === undefined) return [0, now];
  const refilledAt = state[1] as number;
  const steps = Math.max(0, floorDiv(now - refilledAt, intervalMs));
  const missing = (state[0] as number) - steps * amount;
  // A full bucket stops counting steps: its phase restarts at the next use, exactly as a
  // fresh bucket's does, so a state past its reset time is the same as no state at all.
  if (missing <= 0) return [0, now];
  // Advancing by whole steps keeps the progress already made toward the next one.
  return [missing, refilledAt + steps * intervalMs];
}
