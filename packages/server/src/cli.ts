import { isSluiceError } from '@sluice/core';
import { parsePublishArgs, parseServeArgs, USAGE } from './cli-args.js';
import { createServiceLog, logGrpcTo } from './log.js';
import { publishRulesFile } from './publish-rules.js';
import { serve } from './serve.js';

const SIGNALS = ['SIGTERM', 'SIGINT'] as const;

/**
 * The `sluice` command. Exit codes: 0 after a graceful stop, 2 for a bad command line, 1 when
 * start-up fails (bad rules, unreachable Redis, a port in use). SIGTERM and SIGINT stop it
 * gracefully; a second signal exits at once.
 */
export async function main(argv: readonly string[]): Promise<number> {
  const [command, ...args] = argv;
  if (command === undefined || command === '--help' || command === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return command === undefined ? 2 : 0;
  }
  if (command === 'publish-rules') return publish(args);
  if (command !== 'serve') {
    process.stderr.write(`sluice: unknown command "${command}"\n\n${USAGE}\n`);
    return 2;
  }
  const flags = flagsOrExit(parseServeArgs, args);
  if (typeof flags === 'number') return flags;
  // A reader of the log gone (a log shipper restarting, `| head`) fails the next write with
  // EPIPE, which unheard ended the service mid-traffic: the lines are lost, the service goes on.
  process.stderr.on('error', () => {});
  const log = createServiceLog();
  logGrpcTo(log);
  let running: Awaited<ReturnType<typeof serve>>;
  try {
    running = await serve(flags, log);
  } catch (error) {
    const code =
      isSluiceError(error) || (error as { code?: unknown }).code ? (error as { code: string }).code : undefined;
    log.line('error', `cannot start: ${(error as Error).message}`, code === undefined ? {} : { code });
    return 1;
  }
  return new Promise((resolve) => {
    const stop = (signal: NodeJS.Signals): void => {
      log.line('info', `received ${signal}`);
      // A second signal, either one (Ctrl-C after `docker stop`), exits at once.
      for (const name of SIGNALS) {
        process.off(name, stop);
        process.once(name, () => process.exit(1));
      }
      running.stop().then(
        () => resolve(0),
        (error: unknown) => {
          log.line('error', `stopped with an error: ${(error as Error).message}`);
          resolve(1);
        },
      );
    };
    for (const name of SIGNALS) process.once(name, stop);
  });
}

/** `sluice publish-rules`: prints the version stored; 2 for a bad command line, 1 when it fails. */
async function publish(args: readonly string[]): Promise<number> {
  const flags = flagsOrExit(parsePublishArgs, args);
  if (typeof flags === 'number') return flags;
  try {
    const version = await publishRulesFile(flags);
    process.stdout.write(`${version}\n`);
    return 0;
  } catch (error) {
    process.stderr.write(`sluice: cannot publish: ${withCode(error)}\n`);
    return 1;
  }
}

/** A command's flags, or its exit code when there is nothing more to do: 0 after `--help`, 2 for a bad command line. */
function flagsOrExit<T extends object>(
  parse: (args: readonly string[]) => T | 'help',
  args: readonly string[],
): T | number {
  let flags: T | 'help';
  try {
    flags = parse(args);
  } catch (error) {
    process.stderr.write(`sluice: ${withCode(error)}\n\n${USAGE}\n`);
    return 2;
  }
  if (flags === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  return flags;
}

/** An error's message, with its code when it has one of sluice's: what scripts and people match on. */
function withCode(error: unknown): string {
  const { message } = error as Error;
  // A rules error names each problem's code in its message already.
  return isSluiceError(error) && !message.includes(`(${error.code})`) ? `${message} (${error.code})` : message;
}
