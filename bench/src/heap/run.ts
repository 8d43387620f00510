import { finish, lastJson, spawnNode } from '../lib/children.js';
import { fixed } from '../lib/format.js';
import type { Progress } from '../lib/progress.js';
import { bytesPerKey, type HeapResult } from '../results.js';

/** One fresh process per contender, pinned to core 0, with a forced GC before each reading. */
export async function runHeap(contenders: readonly string[], keys: number, progress: Progress): Promise<HeapResult[]> {
  const planned = 1.5 + keys / 250_000;
  progress.plan(contenders.length, planned);
  const results: HeapResult[] = [];
  for (const contender of contenders) {
    const child = spawnNode(
      0,
      'heap/worker.ts',
      ['--contender', contender, '--keys', String(keys)],
      ['--expose-gc', '--max-old-space-size=4096'],
    );
    const done = await finish(child, 120_000);
    const result: HeapResult =
      done.code === 0
        ? { contender, keys, ...lastJson<Omit<HeapResult, 'contender' | 'keys'>>(done.stdout) }
        : { contender, keys, error: done.stderr.trim().split('\n').slice(-3).join(' ') };
    const shown = result.unavailable ?? result.error ?? `${fixed(bytesPerKey(result), 0)} heap + external B/key`;
    progress.done(`heap ${contender} (${keys.toLocaleString('en-US')} keys)`, shown, planned);
    results.push(result);
  }
  return results;
}
