/** The longest timer Node keeps: one set any longer fires after 1 ms instead. */
export const MAX_TIMER_MS = 2 ** 31 - 1;
