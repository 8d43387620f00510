import { entryPoint, finish, nodeFlags, spawnPinned } from '../lib/children.js';

/**
 * Instructions per call of a loop file, counted by callgrind: the loop runs twice, `long` and
 * `short` times, and the difference over `long − short` leaves out start-up and warm-up.
 * `--single-threaded` keeps V8's background compiler and collector threads, which land at
 * different moments in each run, out of the count; fixed hash and random seeds give every run
 * the same hash tables (a Map's chains otherwise differ from run to run). What is left moves by
 * some 50 per call between runs of a memory cell, whatever else the machine is doing. The loop
 * is given its arguments and then the count.
 */
export async function instructionsPerCall(
  loop: string,
  args: readonly string[],
  long: number,
  short: number,
): Promise<number> {
  return ((await instructions(loop, args, long)) - (await instructions(loop, args, short))) / (long - short);
}

async function instructions(loop: string, args: readonly string[], count: number): Promise<number> {
  const child = spawnPinned(0, 'valgrind', [
    ...[
      '--tool=callgrind',
      '--callgrind-out-file=/dev/null',
      process.execPath,
      '--single-threaded',
      '--hash-seed=1',
      '--random-seed=1',
    ],
    ...[...nodeFlags, entryPoint(loop), ...args, String(count)],
  ]);
  const done = await finish(child, 600_000);
  const collected = /Collected : (\d+)/.exec(done.stderr);
  if (done.code !== 0 || collected === null) throw new Error(`${args.join(' ')}: ${done.stderr.slice(-2000)}`);
  return Number(collected[1]);
}
