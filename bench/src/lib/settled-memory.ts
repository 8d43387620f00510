import { setTimeout as sleep } from 'node:timers/promises';

const gc = (globalThis as { gc?: () => void }).gc;

/** Memory use after full collections, for a measuring child run with --expose-gc. */
export async function settledMemory(): Promise<NodeJS.MemoryUsage> {
  if (gc === undefined) throw new Error('run with --expose-gc');
  for (let i = 0; i < 4; i++) {
    gc();
    await sleep(20);
  }
  return process.memoryUsage();
}
