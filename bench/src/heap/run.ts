import { isSluice } from '../http/plan.js';
import { finish, lastJson, spawnNode } from '../lib/children.js';
import { fixed } from '../lib/format.js';
import type { Progress } from '../lib/progress.js';
import { bytesPerKey, type HeapResult } from '../results.js';

/**
 * The cores the heap cells run on, one fresh process per contender on each at once: a byte
 * count does not move with a neighbour's load, so the section takes half as long. Only the fill
 * times the report shows beside the bytes meet the other process, in the memory they share.
 */
const LANES = [0, 1] as const;

/** One fresh process per contender, with a forced GC before each reading; results in `contenders`' order. */
export async function runHeap(contenders: readonly string[], keys: number, progress: Progress): Promise<HeapResult[]> {
  const planned = (1.5 + keys / 250_000) / LANES.length;
  progress.plan(contenders.length, planned);
  const results = new Array<HeapResult>(contenders.length);
  // The peers fill slowest (about 7 s at 1M keys, sluice's stores 4 s): started first, so
  // that the lanes finish together.
  const order = contenders.map((_, i) => i);
  order.sort((a, b) => Number(isSluice(contenders[a] as string)) - Number(isSluice(contenders[b] as string)));
  let next = 0;
  const lane = async (cpu: number) => {
    for (let i = order[next++]; i !== undefined; i = order[next++]) {
      const contender = contenders[i] as string;
      const result = await measureHeap(cpu, contender, keys);
      results[i] = result;
      const shown = result.unavailable ?? result.error ?? `${fixed(bytesPerKey(result), 0)} heap + external B/key`;
      progress.done(`heap ${contender} (${keys.toLocaleString('en-US')} keys)`, shown, planned);
    }
  };
  await Promise.all(LANES.map(lane));
  return results;
}

async function measureHeap(cpu: number, contender: string, keys: number): Promise<HeapResult> {
  const child = spawnNode(
    cpu,
    'heap/worker.ts',
    ['--contender', contender, '--keys', String(keys)],
    ['--expose-gc', '--max-old-space-size=4096'],
  );
  const done = await finish(child, 120_000);
  return done.code === 0
    ? { contender, keys, ...lastJson<Omit<HeapResult, 'contender' | 'keys'>>(done.stdout) }
    : { contender, keys, error: done.stderr.trim().split('\n').slice(-3).join(' ') };
}
