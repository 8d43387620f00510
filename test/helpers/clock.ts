/** A clock that only moves when a test moves it: no test ever sleeps. */
export interface ManualClock {
  (): number;
  advance(ms: number): void;
  set(ms: number): void;
}

export function manualClock(start = 1_700_000_000_000): ManualClock {
  let now = start;
  const clock = (() => now) as ManualClock;
  clock.advance = (ms) => {
    now += ms;
  };
  clock.set = (ms) => {
    now = ms;
  };
  return clock;
}
