import { describe, expect, it } from 'vitest';
import { runToEnd } from './example-process.js';

/**
 * examples/custom-store's `start`: a limiter on the example's own store. The store itself is
 * held to the contract by test/conformance/map-store.test.ts.
 */
describe('example custom-store: a limiter on a store of your own', () => {
  it('allows 3 a minute and refuses the fourth', async () => {
    const { code, output } = await runToEnd('custom-store', 'start');
    expect(code, output).toBe(0);
    expect(output.split('\n').filter((line) => line.startsWith('request '))).toEqual([
      'request 1: allowed, 2 left',
      'request 2: allowed, 1 left',
      'request 3: allowed, 0 left',
      'request 4: refused, 0 left',
    ]);
  });
});
