import { setFlagsFromString } from 'node:v8';
import { createLimiter, createMemoryStore } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import { defaultMemoryStore } from '../../../packages/core/src/memory-store/default-store.js';
import { MemoryTable } from '../../../packages/core/src/memory-store/table.js';

// Functions compiled after this may use V8's intrinsics.
setFlagsFromString('--allow-natives-syntax');
const hasFastProperties = new Function('object', 'return %HasFastProperties(object)') as (object: object) => boolean;

// Issue 21: a store or layouts object in dictionary mode made the limiter's load of
// `store.consumeOneSync`, and the store's of `layouts.stale`, generic lookups on every decision.
describe("the memory store's objects on the decision path", () => {
  it('keep fast properties, for every store and table made, not only the first', () => {
    const stores = [
      createMemoryStore(),
      createMemoryStore({ maxKeys: 10 }),
      defaultMemoryStore(),
      defaultMemoryStore(),
    ];
    for (const store of stores) expect(hasFastProperties(store)).toBe(true);
    for (const table of [new MemoryTable(10), new MemoryTable(10), new MemoryTable(10)]) {
      expect(hasFastProperties(table.layouts)).toBe(true);
    }
  });

  it('still show size and evictions as enumerable properties of their own that follow the store', async () => {
    const store = createMemoryStore({ maxKeys: 2 });
    expect(Object.keys(store)).toEqual(expect.arrayContaining(['size', 'evictions']));
    expect(Object.getOwnPropertyDescriptor(store, 'size')).toMatchObject({ enumerable: true, set: undefined });
    const limiter = createLimiter({ limit: 5, window: '1m', store });
    for (const key of ['a', 'b', 'c']) await limiter.consume(key);
    expect([store.size, store.evictions]).toEqual([2, 1]);
    const table = new MemoryTable(10);
    table.layouts.of('ns', limiter.policies);
    expect(table.layouts.size).toBe(1);
  });
});
