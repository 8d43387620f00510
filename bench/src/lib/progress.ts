/**
 * One line per finished job on stderr, with a count and an estimate of the time left, so a
 * long run shows where it is. Estimates use each section's own planned job length.
 */
export interface Progress {
  /** Plans `jobs` more jobs of about `seconds` each. */
  plan(jobs: number, seconds: number): void;
  /** Reports one finished job of the planned kind. */
  done(label: string, result: string, plannedSeconds: number): void;
  note(message: string): void;
}

export function createProgress(out: NodeJS.WritableStream = process.stderr): Progress {
  const startedAt = performance.now();
  let total = 0;
  let finished = 0;
  let secondsLeft = 0;
  const elapsed = () => (performance.now() - startedAt) / 1000;
  return {
    plan(jobs, seconds) {
      total += jobs;
      secondsLeft += jobs * seconds;
    },
    done(label, result, plannedSeconds) {
      finished++;
      secondsLeft = Math.max(0, secondsLeft - plannedSeconds);
      const width = String(total).length;
      out.write(
        `[${String(finished).padStart(width)}/${total}] ${clock(elapsed())} (~${clock(secondsLeft)} left)  ${label.padEnd(58)} ${result}\n`,
      );
    },
    note(message) {
      out.write(`          ${clock(elapsed())}  ${message}\n`);
    },
  };
}

const clock = (seconds: number): string => {
  const s = Math.round(seconds);
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
};
