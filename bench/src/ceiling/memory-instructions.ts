/**
 * Instructions per decision of the in-process memory cells the issue-21 targets read (sluice's
 * gcra and sliding window counter through `createLimiter`, the lru-cache, decision and Map floors,
 * express-rate-limit's `MemoryStore`), on 100k keys, sequential: the same ratios as the
 * `100k keys, seq` column, in a count the machine's load does not move. It counts work, not
 * time: the floors' cache misses weigh more in time than here. Each contender runs under
 * callgrind for 200,000 and 1,200,000 decisions in three layouts (see `callgrind.ts`); about
 * five minutes each.
 * Runs the compiled packages: `pnpm build` first.
 *   pnpm build && pnpm --dir bench exec tsx src/ceiling/memory-instructions.ts [contender…]
 */
import { int } from '../lib/format.js';
import { type Counted, instructionsPerCall } from './callgrind.js';

const contenders = [
  'sluice:memory:gcra',
  'sluice:memory:sliding-window-counter',
  'floor-lru-cache:memory',
  'floor-decision:memory',
  'floor-map:memory',
  'express-rate-limit:memory',
];
const asked = process.argv.slice(2);
const counts = new Map<string, Counted>();
console.log(
  '| contender | instructions per decision (range over layouts) | rate ÷ lru-cache floor, by instructions |\n| --- | ---: | ---: |',
);
for (const id of asked.length > 0 ? asked : contenders) {
  counts.set(id, await instructionsPerCall('ceiling/memory-loop.ts', [id], 1_200_000, 200_000));
}
const floor = counts.get('floor-lru-cache:memory');
for (const [id, { median, low, high }] of counts) {
  // Fewer instructions is faster: the floor's count over the contender's reads as a throughput ratio.
  const ratio = floor === undefined ? '–' : (floor.median / median).toFixed(3);
  console.log(`| ${id} | ${int(median)} (${int(low)}–${int(high)}) | ${ratio} |`);
}
