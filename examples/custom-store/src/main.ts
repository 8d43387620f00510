import { createLimiter } from '@sluice/core';
import { createMapStore } from './map-store.js';

// Any limiter takes the store; it validates the store's shape at construction.
const limiter = createLimiter({ limit: 3, window: '1m', store: createMapStore() });

for (let i = 1; i <= 4; i++) {
  const decision = await limiter.consume('client-1');
  console.log(`request ${i}: ${decision.allowed ? 'allowed' : 'refused'}, ${decision.remaining} left`);
}
