export { defaultMemoryStore } from './default-store.js';
export type { MemoryStore, MemoryStoreOptions } from './memory-store.js';
export { createMemoryStore, DEFAULT_MAX_KEYS } from './memory-store.js';
