import { isEpochMs } from './epoch-ms.js';
import { describe, invalid, SluiceError } from './errors.js';
import { defaultMemoryStore } from './memory-store/index.js';
import { quietLogger } from './quiet-logger.js';
import { isTimerMs } from './timer.js';
import type { LimiterBaseOptions, Logger, OnStoreError, RateLimitStore } from './types.js';

const DEFAULT_STORE_TIMEOUT_MS = 100;

export interface LimiterSettings {
  clock: (() => number) | undefined;
  onStoreError: OnStoreError;
  timeoutMs: number;
  logger: Logger;
  store: RateLimitStore;
}

/**
 * Checks the settings every limiter shares, with their defaults. `createLimiter` calls it, and
 * so does the rules middleware, whose limiters are created per rule on first use: a bad
 * setting must fail at start-up there too, not at the first request.
 */
export function limiterSettings(options: LimiterBaseOptions): LimiterSettings {
  const clock = checkedClock(options.clock);
  // `undefined` alone means "the default": a `null` is a mistake to report, not to paper over.
  const onStoreError: OnStoreError = options.onStoreError === undefined ? 'allow' : options.onStoreError;
  if (!['allow', 'deny', 'throw'].includes(onStoreError))
    invalid('ERR_SLUICE_INVALID_ON_STORE_ERROR', 'onStoreError', onStoreError, "'allow', 'deny' or 'throw'");
  const timeoutMs = options.storeTimeoutMs === undefined ? DEFAULT_STORE_TIMEOUT_MS : options.storeTimeoutMs;
  if (!isTimerMs(timeoutMs))
    invalid(
      'ERR_SLUICE_INVALID_STORE_TIMEOUT',
      'storeTimeoutMs',
      timeoutMs,
      'a whole number of milliseconds from 1 to 2^31 − 1 (the longest timer Node keeps)',
    );
  const logger = checkedLogger(options.logger);
  const store = options.store === undefined ? defaultMemoryStore() : options.store;
  if (!isRateLimitStore(store)) {
    invalid(
      'ERR_SLUICE_INVALID_STORE',
      'store',
      store,
      'a store such as createMemoryStore() or createRedisStore({ client }): a `name` and the methods `consume`, `reset` and `refund`',
    );
  }
  return { clock, onStoreError, timeoutMs, logger: quietLogger(logger), store };
}

/**
 * Whether `value` is a store a limiter can use: a `name` and the methods `consume`, `reset` and
 * `refund`. For the decision service too, which checks its store before any rule's limiter does.
 *
 * @internal
 */
export function isRateLimitStore(value: unknown): value is RateLimitStore {
  const store = value as Partial<RateLimitStore> | null | undefined;
  return (
    typeof store?.consume === 'function' &&
    typeof store.reset === 'function' &&
    typeof store.refund === 'function' &&
    // Every log line and error about the store names it.
    typeof store.name === 'string' &&
    store.name !== ''
  );
}

/**
 * The clock, read once here, so one that returns fractions, NaN or text fails at start-up; a
 * later bad reading rejects that call with the same code. A bad reading never reaches the
 * store: a store that refused it would count as failing, and the fail policy would then let
 * every request through.
 */
function checkedClock(clock: unknown): (() => number) | undefined {
  if (clock === undefined) return undefined;
  if (typeof clock !== 'function')
    invalid('ERR_SLUICE_INVALID_CLOCK', 'clock', clock, 'a function returning whole epoch milliseconds');
  const read = clock as () => unknown;
  const checked = (): number => {
    const now = read();
    if (!isEpochMs(now)) {
      throw new SluiceError(
        'ERR_SLUICE_INVALID_CLOCK',
        `[sluice] Option \`clock\` must return whole epoch milliseconds from 0 to 2^50; it returned ${describe(now)}.`,
      );
    }
    return now;
  };
  checked();
  return checked;
}

/** The `logger` option, or `console` when none is given; anything without a `warn` method throws. */
export function checkedLogger(logger: unknown): Logger {
  const given = logger === undefined ? console : (logger as Logger);
  if (typeof given?.warn !== 'function')
    invalid('ERR_SLUICE_INVALID_LOGGER', 'logger', logger, 'an object with a `warn(message)` method');
  return given;
}
