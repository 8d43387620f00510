import { DEFAULT_MAX_KEYS, type MemoryStore, memoryStoreOver } from './memory-store.js';
import { MemoryTable } from './table.js';

let table: MemoryTable | undefined;
let stores = 0;

/**
 * The store of a limiter or middleware given no `store`: a new memory store, over the one LRU
 * index of this process. With an index each, hundreds of per-route limiters could hold
 * hundreds × `maxKeys` client keys between them, and a client one entry per limiter. Over one
 * index they cost a few kB each, and still count apart: each store files its namespaces under a scope of its own, so two limiters with
 * the same policies never share a count (as with a store each), and one entry per client
 * holds them all. The index's `maxKeys` bound (100 000 client keys) is shared between them.
 */
export function defaultMemoryStore(): MemoryStore {
  table ??= new MemoryTable(DEFAULT_MAX_KEYS);
  stores++;
  return memoryStoreOver(table, `default-${stores}`);
}
