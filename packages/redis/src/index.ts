export type { RedisClient } from './client.js';
export { clientSlot } from './keys.js';
export type { RedisStore, RedisStoreOptions } from './redis-store.js';
export { createRedisStore, DEFAULT_REDIS_PREFIX } from './redis-store.js';
