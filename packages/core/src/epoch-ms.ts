/**
 * The latest time a clock may read: 2^50 ms, in the year 37,648. Past about 2^52 a state's
 * times alone sum beyond 2^53, where the Redis store takes a state for damaged (it checks a
 * state's numbers by their sum, `fast-unrolled.ts`) and decides every request as fresh. @internal
 */
export const MAX_EPOCH_MS = 2 ** 50;

/** Whether a clock's reading is whole epoch milliseconds, from 0 to `MAX_EPOCH_MS`. @internal */
export const isEpochMs = (now: unknown): now is number =>
  Number.isSafeInteger(now) && (now as number) >= 0 && (now as number) <= MAX_EPOCH_MS;
