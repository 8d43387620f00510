import { createMemoryStore } from '@sluice/memory';
import { describe } from 'vitest';
import { storeConformance } from './store-conformance.js';

describe('memory store conformance', () => {
  const store = createMemoryStore();
  storeConformance(() => store);
});
