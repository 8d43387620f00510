import { createMemoryStore } from '@sluice/memory';
import { describe } from 'vitest';
import { limiterRegressions } from './limiter-regressions.js';
import { storeConformance } from './store-conformance.js';

describe('memory store conformance', () => {
  const store = createMemoryStore();
  storeConformance(() => store);
  limiterRegressions(() => store);
});
