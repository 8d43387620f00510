import { describe } from 'vitest';
import { createMapStore } from '../../examples/custom-store/src/map-store.js';
import { storeConformance } from './store-conformance.js';

// The worked example of docs/stores.md: a third-party store passes the same suite.
describe('map store (examples/custom-store) conformance', () => {
  const store = createMapStore();
  storeConformance(() => store);
});
