/**
 * The cases `http-layer-loop.ts` runs and `http-layer-instructions.ts` counts:
 *   memory-pass     the memory store, every request allowed;
 *   memory-429      the memory store, every request refused;
 *   deny-cache-429  the Redis store, every request refused by its deny cache.
 */
export const httpLayerCases = ['memory-pass', 'memory-429', 'deny-cache-429'] as const;
