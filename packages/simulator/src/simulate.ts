import { createLimiter, type LimiterOptions, type Policy, SluiceError } from '@sluice/core';
import { createMemoryStore } from '@sluice/memory';
import { type Arrival, checkTraffic, type Traffic } from './traffic/arrival.js';
import { elasticWithoutLoad } from './virtual-load.js';

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** A limiter's options as `createLimiter` takes them, less the store and clock the simulator supplies. */
export type SimulatedLimiterOptions = DistributiveOmit<LimiterOptions, 'store' | 'clock'>;

/** What the limiter decided for one arrival. */
export interface SimulatedDecision extends Arrival {
  allowed: boolean;
  /** 0 when allowed; what a refused client would be told to wait (`Retry-After`). */
  retryAfterMs: number;
  /** Queue mode: how long the request is held before it goes on. */
  delayMs: number;
  overLimit?: 'soft' | 'elastic' | 'shadow';
}

export interface Simulation {
  /** The limiter's validated policies (defaults applied). */
  readonly policies: readonly Policy[];
  /** One decision per arrival, in traffic order. */
  readonly decisions: readonly SimulatedDecision[];
}

/**
 * Runs `traffic` through a real limiter (`createLimiter` over a fresh memory store) whose
 * clock is set to each arrival's time: virtual time, so a simulated day takes seconds and
 * every run of the same traffic decides the same.
 *
 * Throws `ERR_SLUICE_INVALID_TRAFFIC` naming the first arrival that is not in time order or
 * has a bad time, key or cost; limiter options are validated exactly as `createLimiter` does,
 * and elastic throttling without a `throttle.load` of its own throws `ERR_SLUICE_INVALID_OPTION`.
 *
 * @example
 * const { decisions } = await simulate(await readTrace('access.log'), { limit: 60, window: '1m' });
 * const refused = decisions.filter((d) => !d.allowed).length;
 */
export async function simulate(traffic: Traffic, options: SimulatedLimiterOptions): Promise<Simulation> {
  checkTraffic(traffic);
  if (typeof options === 'object' && options !== null && ('store' in options || 'clock' in options)) {
    throw new SluiceError(
      'ERR_SLUICE_CONFLICTING_OPTIONS',
      '[sluice] The simulator brings its own memory store and virtual clock: leave out `store` and `clock`.',
    );
  }
  let now = 0;
  // Enough room for every client of the trace: eviction would make the simulation forget.
  const keys = new Set(traffic.map((a) => a.key)).size;
  const limiter = createLimiter({
    ...(options as LimiterOptions),
    store: createMemoryStore({ maxKeys: Math.max(1, keys) }),
    clock: () => now,
  });
  // After createLimiter, so a throttle that is wrong in any other way gets core's own error.
  const throttle = (options as LimiterOptions).throttle;
  if (throttle?.mode === 'elastic' && throttle.load === undefined) throw elasticWithoutLoad('simulate');
  const decisions: SimulatedDecision[] = new Array(traffic.length);
  for (let i = 0; i < traffic.length; i++) {
    const arrival = traffic[i] as Traffic[number];
    now = arrival.at;
    const decision = await limiter.consume(arrival.key, { cost: arrival.cost });
    const simulated: SimulatedDecision = {
      at: arrival.at,
      key: arrival.key,
      cost: arrival.cost,
      allowed: decision.allowed,
      retryAfterMs: decision.retryAfterMs,
      delayMs: decision.delayMs,
    };
    if (decision.overLimit !== undefined) simulated.overLimit = decision.overLimit;
    decisions[i] = simulated;
  }
  return { policies: limiter.policies, decisions };
}
