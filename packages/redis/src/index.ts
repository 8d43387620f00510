export type { RedisClient } from './client.js';
export { clientSlot } from './keys.js';
export type { LocalFirstStatus } from './local-first/local-first-store.js';
export type { LocalFirstControl, RedisStore, RedisStoreOptions } from './redis-store.js';
export { createRedisStore, DEFAULT_REDIS_PREFIX } from './redis-store.js';
