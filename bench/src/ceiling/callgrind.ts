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

/** Callgrind's first-level data cache misses, as its cache simulation names them: reads, then writes. */
export const DATA_MISSES = ['D1mr', 'D1mw'] as const;

/** Each counted event per call, `Ir` (instructions) first, then with `cache` the `DATA_MISSES`. */
export type CountedEvents = ReadonlyMap<string, Counted>;

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
  return (await eventsPerCall(loop, args, long, short, false)).get('Ir') as Counted;
}

/**
 * `instructionsPerCall`, and with `cache` callgrind's simulation of the host's caches (about
 * twice as slow): per call, each of `DATA_MISSES` too, each event's median and range over the
 * layouts on its own. Two loops that execute as much can still differ in what each
 * instruction costs: a first-level miss costs as much as dozens of instructions.
 */
export async function eventsPerCall(
  loop: string,
  args: readonly string[],
  long: number,
  short: number,
  cache: boolean,
): Promise<CountedEvents> {
  const names = cache ? ['Ir', ...DATA_MISSES] : ['Ir'];
  const perCall = new Map<string, number[]>(names.map((name) => [name, []]));
  for (const pad of LAYOUTS) {
    const longCount = await events(loop, args, long, pad, cache);
    const shortCount = await events(loop, args, short, pad, cache);
    for (const name of names) {
      const difference = (longCount.get(name) ?? Number.NaN) - (shortCount.get(name) ?? Number.NaN);
      perCall.get(name)?.push(difference / (long - short));
    }
  }
  return new Map(
    names.map((name) => {
      const counts = (perCall.get(name) ?? []).sort((a, b) => a - b);
      return [name, { median: counts[1] as number, low: counts[0] as number, high: counts[2] as number }];
    }),
  );
}

/** The events callgrind collected over one run of the loop, by name. */
async function events(
  loop: string,
  args: readonly string[],
  count: number,
  pad: number,
  cache: boolean,
): Promise<Map<string, number>> {
  const child = spawnPinned(0, 'env', [
    `SLUICE_BENCH_LAYOUT=${'x'.repeat(pad)}`,
    ...[
      'valgrind',
      '--tool=callgrind',
      ...(cache ? ['--cache-sim=yes'] : []),
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
  const done = await finish(child, 1_200_000);
  const collected = done.code === 0 ? collectedEvents(done.stderr) : undefined;
  if (collected === undefined) throw new Error(`${args.join(' ')}: ${done.stderr.slice(-2000)}`);
  return collected;
}

/**
 * The totals callgrind reports on exit (`Events : Ir D1mr …` over `Collected : 123 4 …`), by
 * event name; undefined when it reported none or the two lines disagree.
 */
export function collectedEvents(stderr: string): Map<string, number> | undefined {
  const names = /Events\s*: ([\w ]+)/.exec(stderr)?.[1]?.trim().split(/\s+/);
  const totals = /Collected\s*: ([\d ]+)/.exec(stderr)?.[1]?.trim().split(/\s+/).map(Number);
  if (names === undefined || totals === undefined || names.length !== totals.length) return undefined;
  return new Map(names.map((name, i) => [name, totals[i] as number]));
}
