/**
 * Instructions per decision of the in-process memory cells the issue-21 targets read (sluice's
 * gcra and sliding window counter through `createLimiter`, the lru-cache, decision and Map floors,
 * express-rate-limit's `MemoryStore`), on 100k keys, sequential: the same ratios as the
 * `100k keys, seq` column, in a count the machine's load does not move. It counts work, not
 * time: the floors' cache misses weigh more in time than here. Each contender runs under
 * callgrind for 200,000 and 1,200,000 decisions in three layouts (see `callgrind.ts`); about
 * five minutes each.
 * `--cache` adds, per decision, callgrind's simulated first-level data cache misses (reads and
 * writes; about twice as slow) and the bytes the decision allocates (`memory-allocation.ts`):
 * the memory traffic that the count of instructions does not weigh. Each new object is written
 * into lines the cache does not hold, so bytes allocated show up as write misses.
 * Runs the compiled packages: `pnpm build` first.
 *   pnpm build && pnpm --dir bench exec tsx src/ceiling/memory-instructions.ts [--cache] [contender…]
 */
import { finish, lastJson, spawnNode } from '../lib/children.js';
import { fixed, int } from '../lib/format.js';
import { type Counted, type CountedEvents, DATA_MISSES, eventsPerCall } from './callgrind.js';

const contenders = [
  'sluice:memory:gcra',
  'sluice:memory:sliding-window-counter',
  'floor-lru-cache:memory',
  'floor-decision:memory',
  'floor-map:memory',
  'express-rate-limit:memory',
];
const argv = process.argv.slice(2);
const cache = argv[0] === '--cache';
if (cache) argv.shift();

/** Bytes `id` allocates per decision, measured outside callgrind (see `memory-allocation.ts`). */
async function bytesAllocated(id: string): Promise<number> {
  const flags = ['--expose-gc', '--min-semi-space-size=64', '--max-semi-space-size=64'];
  const done = await finish(spawnNode(0, 'ceiling/memory-allocation.ts', [id], flags), 300_000);
  if (done.code !== 0) throw new Error(`${id}: ${done.stderr.slice(-2000)}`);
  return lastJson<{ bytesPerDecision: number }>(done.stdout).bytesPerDecision;
}

const shown = (counted: Counted | undefined, format: (n: number) => string) =>
  counted === undefined ? '–' : `${format(counted.median)} (${format(counted.low)}–${format(counted.high)})`;

const missColumns = cache ? ' first-level data read misses | first-level data write misses | bytes allocated |' : '';
console.log(
  `| contender | instructions per decision (range over layouts) | rate ÷ lru-cache floor, by instructions |${missColumns}`,
);
console.log(`| --- | ---: | ---: |${cache ? ' ---: | ---: | ---: |' : ''}`);
const counts = new Map<string, CountedEvents>();
const allocated = new Map<string, number>();
for (const id of argv.length > 0 ? argv : contenders) {
  counts.set(id, await eventsPerCall('ceiling/memory-loop.ts', [id], 1_200_000, 200_000, cache));
  if (cache) allocated.set(id, await bytesAllocated(id));
}
const floor = counts.get('floor-lru-cache:memory')?.get('Ir');
for (const [id, events] of counts) {
  const instructions = events.get('Ir') as Counted;
  // Fewer instructions is faster: the floor's count over the contender's reads as a throughput ratio.
  const ratio = floor === undefined ? '–' : (floor.median / instructions.median).toFixed(3);
  const misses = cache
    ? ` ${DATA_MISSES.map((event) => shown(events.get(event), (n) => fixed(n, 2))).join(' | ')} | ${int(allocated.get(id) ?? Number.NaN)} |`
    : '';
  console.log(`| ${id} | ${shown(instructions, int)} | ${ratio} |${misses}`);
}
