import { contenderFor } from '../inproc/contenders.js';
import { buildKeys } from '../lib/keys.js';

/** An in-process memory contender over 100k client keys in the bench's order (the `100k keys, seq` cell). */
export interface MemoryDecisions {
  /** Makes `count` decisions, each awaited before the next, going on through the keys; fails unless all were allowed. */
  decide(count: number): Promise<void>;
  close(): Promise<void> | void;
}

export async function memoryDecisions(id: string): Promise<MemoryDecisions> {
  const keys = buildKeys(100_000);
  const contender = await contenderFor(id)({ mode: 'pass', redisPort: undefined, maxKeys: keys.length });
  let k = 0;
  return {
    async decide(count) {
      let allowed = 0;
      for (let i = 0; i < count; i++, k = k + 1 === keys.length ? 0 : k + 1) {
        if (contender.allowed(await contender.call(keys[k] as string), false) === true) allowed++;
      }
      if (allowed !== count) throw new Error(`${id}: ${count - allowed} decisions were not allowed`);
    },
    close: () => contender.close(),
  };
}
