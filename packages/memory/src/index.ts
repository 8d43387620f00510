// The memory store lives in core, beside the limiter whose default it is, so that core alone
// limits correctly; this package stays its documented entry point.
export type { MemoryStore, MemoryStoreOptions } from '@sluice/core';
export { createMemoryStore, DEFAULT_MAX_KEYS } from '@sluice/core';
