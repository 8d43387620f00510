import { createMemoryStore, type MemoryStore } from './memory-store.js';

/**
 * The store of a limiter or middleware given no `store`: a memory store of its own, as each
 * peer library's default is. Its index grows as clients arrive, so hundreds of per-route
 * limiters cost little (200 cost 3.2 MB and 26 ms between them: `pnpm --filter @sluice/bench run
 * creation`). None is shared: when every default store sat on one index of the process, a
 * client who could make one limiter see many keys (one taken from a header) pushed every
 * other limiter's clients out of it, and reset a login limiter's count in 22 s.
 */
export const defaultMemoryStore = (): MemoryStore => createMemoryStore();
