import { FOREIGN_LIMIT, waitForQuiet } from './cpu.js';

export interface Disturbance {
  /** Cores used by processes outside the benchmark while the job ran. */
  foreign: number;
  /** True when the first attempt was disturbed and this is the second. */
  retried: boolean;
  waitedMs: number;
}

/**
 * Runs one measurement on a quiet machine: waits (bounded) for other work to stop, runs the
 * job, and repeats it once if foreign load still shared the cores. The kept result carries
 * its foreign load so the report can flag it.
 */
export async function measured<T>(
  ownPids: Record<string, number | undefined>,
  job: () => Promise<{ result: T; foreign: number }>,
  quietWaitMs: number,
): Promise<T & Disturbance> {
  let waited = await waitForQuiet(ownPids, quietWaitMs);
  let { result, foreign } = await job();
  let retried = false;
  if (foreign > FOREIGN_LIMIT) {
    const first = { result, foreign };
    const again = await waitForQuiet(ownPids, 2 * quietWaitMs);
    ({ result, foreign } = await job());
    retried = true;
    waited = { waitedMs: waited.waitedMs + again.waitedMs, foreign: again.foreign };
    if (first.foreign < foreign) ({ result, foreign } = first);
  }
  return { ...result, foreign, retried, waitedMs: waited.waitedMs };
}
