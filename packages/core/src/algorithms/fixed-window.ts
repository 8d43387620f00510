import { type Algorithm, clockLag } from './algorithm.js';

/**
 * Fixed window: one counter per aligned window `floor(now / W)`. State: `[windowIndex, count]`.
 * Up to 2 × limit can pass around a window boundary; that is part of its definition.
 */
export const fixedWindow: Algorithm = {
  evaluate(state, policy, capacity, cost, at) {
    const windowMs = policy.windowMs;
    const lag = clockLag(state, windowMs, at);
    const now = at + lag;
    const index = Math.floor(now / windowMs);
    const count = state !== undefined && state[0] === index ? (state[1] as number) : 0;
    const untilNextWindow = (index + 1) * windowMs - now;
    if (count + cost <= capacity) {
      const used = count + cost;
      return {
        allowed: true,
        remaining: capacity - used,
        resetAfterMs: used > 0 ? untilNextWindow + lag : 0,
        retryAfterMs: 0,
        delayMs: 0,
        next: [index, used],
      };
    }
    return {
      allowed: false,
      remaining: Math.max(0, capacity - count),
      resetAfterMs: count > 0 ? untilNextWindow + lag : 0,
      retryAfterMs: untilNextWindow + lag,
      delayMs: 0,
      next: state ?? [index, 0],
    };
  },

  seed: (used, policy, now) => [Math.floor(now / policy.windowMs), used],

  refund(state, policy, _capacity, cost, now) {
    const index = Math.floor(now / policy.windowMs);
    if (state === undefined || state[0] !== index) return state;
    return [index, Math.max(0, (state[1] as number) - cost)];
  },
};
