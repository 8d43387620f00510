/**
 * The cases `http-layer-loop.ts` runs and `http-layer-instructions.ts` counts, each on the
 * default algorithm (the sliding window counter), as the HTTP section runs sluice:
 *   memory-pass       the memory store, every request allowed;
 *   memory-429        the memory store, every request refused;
 *   deny-cache-429    the Redis store, every request refused by its deny cache;
 *   local-first-pass  the Redis store in local-first mode, every request allowed on local counts.
 */
export const httpLayerCases = ['memory-pass', 'memory-429', 'deny-cache-429', 'local-first-pass'] as const;
