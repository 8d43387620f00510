/**
 * Bytes a memory contender allocates per decision, for `memory-instructions.ts --cache`: its
 * decisions (as `memory-loop.ts` makes them) warmed up, then counted in batches, each started
 * on an empty young generation and far too small to fill it (20,000 decisions of a few
 * hundred bytes in 64 MB), so that no scavenge empties it mid-batch: what the young
 * generation holds after a batch, over the batch's decisions. Prints the median over the
 * batches as JSON. Run with the flags `memory-instructions.ts` gives it:
 *   node --expose-gc --min-semi-space-size=64 --max-semi-space-size=64 memory-allocation.js <contender>
 */
import { getHeapSpaceStatistics } from 'node:v8';
import { median } from '../lib/stats.js';
import { memoryDecisions } from './memory-decisions.js';

const BATCH = 20_000;
const BATCHES = 5;
const WARM_UP = 300_000;

const collect = globalThis.gc;
if (collect === undefined) throw new Error('memory-allocation.ts needs --expose-gc');
const youngBytes = (): number =>
  getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')?.space_used_size ?? Number.NaN;

const decisions = await memoryDecisions(process.argv[2] ?? '');
await decisions.decide(WARM_UP);
const perDecision: number[] = [];
for (let batch = 0; batch < BATCHES; batch++) {
  collect();
  const before = youngBytes();
  await decisions.decide(BATCH);
  const allocated = youngBytes() - before;
  // A scavenge mid-batch would leave less than the batch allocated.
  if (!(allocated > 0)) throw new Error(`a collection ran during the batch: ${allocated} bytes`);
  perDecision.push(allocated / BATCH);
}
await decisions.close();
console.log(JSON.stringify({ bytesPerDecision: median(perDecision) }));
