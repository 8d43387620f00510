/**
 * The ending of every measuring child process: its result as one JSON line on stdout for the
 * parent to read, or the error on stderr and exit code 1.
 */
export function reportAndExit<T>(result: Promise<T>): void {
  result.then(
    (value) => {
      process.stdout.write(`${JSON.stringify(value)}\n`);
      process.exit(0);
    },
    (error: unknown) => {
      process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
      process.exit(1);
    },
  );
}
