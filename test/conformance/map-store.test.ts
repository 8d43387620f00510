import { describe } from 'vitest';
import { createMapStore } from '../../examples/custom-store/src/map-store.js';
import { limiterRegressions } from './limiter-regressions.js';
import { storeConformance } from './store-conformance.js';

// The worked example of docs/stores.md: a third-party store passes the same suites as the
// stores sluice ships, the limiter regressions included (a changed policy never resets a client).
describe('map store (examples/custom-store) conformance', () => {
  const store = createMapStore();
  storeConformance(() => store);
  limiterRegressions(() => store);
});
