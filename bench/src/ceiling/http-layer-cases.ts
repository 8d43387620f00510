/**
 * The cases `http-layer-loop.ts` runs and `http-layer-instructions.ts` counts, each on the
 * default algorithm (the sliding window counter), as the HTTP section runs sluice:
 *   memory-pass       the memory store, every request allowed;
 *   memory-429        the memory store, every request refused;
 *   deny-cache-429    the Redis store, every request refused by its deny cache;
 *   local-first-pass  the Redis store in local-first mode, every request allowed on local counts;
 *   redis-pass        the Redis store, every request allowed by Redis, 25 asked at once and
 *                     awaited together (one script call each 25, as a busy server's are).
 */
export const httpLayerCases = [
  'memory-pass',
  'memory-429',
  'deny-cache-429',
  'local-first-pass',
  'redis-pass',
] as const;

/** How many `redis-pass` asks at once: one batch of the Redis store's. */
export const REDIS_PASS_IN_FLIGHT = 25;
