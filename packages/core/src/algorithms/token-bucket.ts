import { type Algorithm, ceilDiv, floorDiv } from './algorithm.js';

/**
 * Token bucket. Continuous refill by default: one token is W units and L units are added per
 * ms, so refill is exact with no drift; state `[tokens, refilledAtMs]` in those units.
 * With `refillIntervalMs`, whole tokens arrive `refillAmount` at a time and `refilledAt`
 * advances by whole intervals so partial progress is kept (Smyte's design); state
 * `[tokens, refilledAtMs]` in whole tokens.
 */
export const tokenBucket: Algorithm = {
  evaluate(state, policy, capacity, cost, now) {
    return policy.refillIntervalMs > 0
      ? evaluateStepped(state, policy.refillAmount, policy.refillIntervalMs, capacity, cost, now)
      : evaluateContinuous(state, policy.limit, policy.windowMs, capacity, cost, now);
  },

  refund(state, policy, capacity, cost, now) {
    if (policy.refillIntervalMs > 0) {
      const [tokens, refilledAt] = steppedTokensAt(state, policy.refillAmount, policy.refillIntervalMs, capacity, now);
      return [Math.min(capacity, tokens + cost), refilledAt];
    }
    const full = capacity * policy.windowMs;
    return [Math.min(full, tokensAt(state, policy.limit, full, now) + cost * policy.windowMs), now];
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
  const tokens = tokensAt(state, limit, full, now);
  const need = cost * windowMs;
  if (tokens >= need) {
    const left = tokens - need;
    return {
      allowed: true,
      remaining: floorDiv(left, windowMs),
      resetAfterMs: ceilDiv(full - left, limit),
      retryAfterMs: 0,
      delayMs: 0,
      next: [left, now],
    };
  }
  return {
    allowed: false,
    remaining: floorDiv(tokens, windowMs),
    resetAfterMs: ceilDiv(full - tokens, limit),
    retryAfterMs: ceilDiv(need - tokens, limit),
    delayMs: 0,
    next: [tokens, now],
  };
}

/** Tokens refilled up to `now`; a fresh bucket is full, and tokens above `full` spill over. */
function tokensAt(state: readonly number[] | undefined, limit: number, full: number, now: number): number {
  if (state === undefined) return full;
  const tokens = Math.min(full, state[0] as number);
  const elapsed = now - (state[1] as number);
  if (elapsed <= 0) return tokens;
  return elapsed >= ceilDiv(full - tokens, limit) ? full : tokens + elapsed * limit;
}

function evaluateStepped(
  state: readonly number[] | undefined,
  amount: number,
  intervalMs: number,
  capacity: number,
  cost: number,
  now: number,
) {
  const [tokens, refilledAt] = steppedTokensAt(state, amount, intervalMs, capacity, now);
  const untilFull = (left: number) =>
    left >= capacity ? 0 : refilledAt + ceilDiv(capacity - left, amount) * intervalMs - now;
  if (tokens >= cost) {
    const left = tokens - cost;
    return {
      allowed: true,
      remaining: left,
      resetAfterMs: untilFull(left),
      retryAfterMs: 0,
      delayMs: 0,
      next: [left, refilledAt],
    };
  }
  return {
    allowed: false,
    remaining: tokens,
    resetAfterMs: untilFull(tokens),
    retryAfterMs: refilledAt + ceilDiv(cost - tokens, amount) * intervalMs - now,
    delayMs: 0,
    next: [tokens, refilledAt],
  };
}

function steppedTokensAt(
  state: readonly number[] | undefined,
  amount: number,
  intervalMs: number,
  capacity: number,
  now: number,
): [tokens: number, refilledAt: number] {
  if (state === undefined) return [capacity, now];
  const refilledAt = state[1] as number;
  const steps = Math.max(0, floorDiv(now - refilledAt, intervalMs));
  const tokens = (state[0] as number) + steps * amount;
  // A full bucket stops counting steps: its phase restarts at the next use, exactly as a
  // fresh bucket's does, so a state past its reset time is the same as no state at all.
  if (tokens >= capacity) return [capacity, now];
  // Advancing by whole steps keeps the progress already made toward the next one.
  return [tokens, refilledAt + steps * intervalMs];
}
