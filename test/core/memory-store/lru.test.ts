import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LruMap } from '../../../packages/core/src/memory-store/lru.js';

/** The memory store's index against a plain model of a strict LRU: keys ordered least recently used first. */
describe("the memory store's LRU index", () => {
  const operation = fc.record({
    op: fc.constantFrom('get', 'peek', 'set', 'set', 'delete'),
    key: fc.integer({ min: 0, max: 12 }).map(String),
    value: fc.integer(),
  });

  it('holds at most max keys and evicts exactly the least recently used, as a model LRU does', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 8 }), fc.array(operation, { maxLength: 300 }), (max, operations) => {
        const lru = new LruMap<number>(max);
        const order: string[] = [];
        const values = new Map<string, number>();
        const use = (key: string) => {
          order.splice(order.indexOf(key), 1);
          order.push(key);
        };
        for (const { op, key, value } of operations) {
          if (op === 'get') {
            expect(lru.get(key)).toBe(values.get(key));
            if (values.has(key)) use(key);
          } else if (op === 'peek') {
            expect(lru.peek(key)).toBe(values.get(key));
          } else if (op === 'set') {
            if (values.has(key)) use(key);
            else {
              if (order.length === max) values.delete(order.shift() as string);
              order.push(key);
            }
            values.set(key, value);
            lru.set(key, value);
          } else {
            if (values.delete(key)) order.splice(order.indexOf(key), 1);
            lru.delete(key);
          }
          expect(lru.size).toBe(order.length);
          for (const k of order) expect(lru.peek(k)).toBe(values.get(k));
        }
      }),
      { numRuns: 500 },
    );
  });

  it('grows past its first slots up to max keys', () => {
    const lru = new LruMap<number>(5000);
    for (let i = 0; i < 6000; i++) lru.set(`k${i}`, i);
    expect(lru.size).toBe(5000);
    expect(lru.peek('k999')).toBeUndefined();
    expect(lru.get('k1000')).toBe(1000);
    lru.set('new', 1);
    expect(lru.peek('k1001')).toBeUndefined();
    expect(lru.peek('k1000')).toBe(1000);
  });
});
