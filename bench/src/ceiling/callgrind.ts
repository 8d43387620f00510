import { entryPoint, finish, nodeFlags, spawnPinned } from '../lib/children.js';

/** A count over the layouts: the median and the range. */
export interface Counted {
  readonly median: number;
  readonly low: number;
  readonly high: number;
}

/**
 * Sizes of a padding variable in the child's environment. The environment sits below the stack,
 * so its size moves where everything else starts; a memory cell's warm-up then took other
 * paths through the collector and the optimising compiler (allocation-site pretenuring, which
 * code is optimised when), and its count moved by up to 70 a call from one size to another,
 * where two runs of one size mostly agree within 5.
 */
const LAYOUTS = [0, 700, 1400];

/**
 * Instructions per call of a loop file, counted by callgrind: the loop runs twice, `long` and
 * `short` times, and the difference over `long − short` leaves out start-up and warm-up. That
 * for each of three `LAYOUTS`, the median read with its range. `--single-threaded` keeps V8's
 * background compiler and collector threads, which land at different moments in each run, out
 * of the count; fixed hash and random seeds give every run the same hash tables (a Map's chains
 * otherwise differ from run to run); `--predictable` takes out heuristics that read the clock;
 * a first old generation of 1 GiB leaves out full collections, which fell in one run's warm-up
 * and not another's (some 40 million instructions each). The loop is given its arguments and
 * then the count.
 */
export async function instructionsPerCall(
  loop: string,
  args: readonly string[],
  long: number,
  short: number,
): Promise<Counted> {
  const counts: number[] = [];
  for (const pad of LAYOUTS) {
    const longCount = await instructions(loop, args, long, pad);
    counts.push((longCount - (await instructions(loop, args, short, pad))) / (long - short));
  }
  counts.sort((a, b) => a - b);
  return { median: counts[1] as number, low: counts[0] as number, high: counts[2] as number };
}

async function instructions(loop: string, args: readonly string[], count: number, pad: number): Promise<number> {
  const child = spawnPinned(0, 'env', [
    `SLUICE_BENCH_LAYOUT=${'x'.repeat(pad)}`,
    ...[
      'valgrind',
      '--tool=callgrind',
      '--callgrind-out-file=/dev/null',
      process.execPath,
      '--single-threaded',
      '--predictable',
      '--initial-old-space-size=1024',
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
