/** The longest timer Node keeps: one set any longer fires after 1 ms instead. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** Whether `value` is a wait a Node timer keeps: whole milliseconds from `least` to {@link MAX_TIMER_MS}. */
export function isTimerMs(value: unknown, least = 1): value is number {
  return Number.isSafeInteger(value) && (value as number) >= least && (value as number) <= MAX_TIMER_MS;
}
