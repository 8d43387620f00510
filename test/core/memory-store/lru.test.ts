import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LruIndex, NO_SLOT } from '../../../packages/core/src/memory-store/lru.js';

/**
 * The memory store's index against a plain model of a strict LRU: keys ordered least recently
 * used first. Keys are as `storeKey` returns them: kept (digits here) or hashed (`#` and digits).
 */
describe("the memory store's LRU index", () => {
  const operation = fc.record({
    op: fc.constantFrom('get', 'getAsGiven', 'peek', 'add', 'add', 'delete'),
    key: fc.tuple(fc.boolean(), fc.integer({ min: 0, max: 12 })).map(([hashed, n]) => `${hashed ? '#' : ''}${n}`),
  });

  it('holds at most max keys, evicts exactly the least recently used, and keeps each key on one slot', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 8 }), fc.array(operation, { maxLength: 300 }), (max, operations) => {
        const lru = new LruIndex(max);
        const order: string[] = [];
        const slots = new Map<string, number>();
        const use = (key: string) => {
          order.splice(order.indexOf(key), 1);
          order.push(key);
        };
        for (const { op, key } of operations) {
          const held = slots.has(key);
          if (op === 'get') {
            expect(lru.get(key)).toBe(held ? slots.get(key) : NO_SLOT);
            if (held) use(key);
          } else if (op === 'getAsGiven') {
            // A client's text finds a key held as given, never a hashed one.
            const found = held && !key.startsWith('#');
            expect(lru.getAsGiven(key)).toBe(found ? slots.get(key) : NO_SLOT);
            if (found) use(key);
          } else if (op === 'peek') {
            expect(lru.peek(key)).toBe(held ? slots.get(key) : NO_SLOT);
          } else if (op === 'add') {
            if (held) continue;
            const evicted = order.length === max ? (order.shift() as string) : undefined;
            const slot = lru.add(key);
            // An evicted key's slot is the one handed to the new key.
            if (evicted !== undefined) {
              expect(slot).toBe(slots.get(evicted));
              slots.delete(evicted);
            }
            order.push(key);
            slots.set(key, slot);
          } else {
            if (slots.delete(key)) order.splice(order.indexOf(key), 1);
            lru.delete(key);
          }
          expect(lru.size).toBe(order.length);
          for (const k of order) expect(lru.peek(k)).toBe(slots.get(k));
          expect(new Set(slots.values()).size).toBe(slots.size);
          for (const slot of slots.values()) expect(slot).toBeLessThan(lru.capacity);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('grows past its first slots up to max keys, and no further', () => {
    const lru = new LruIndex(5000);
    for (let i = 0; i < 6000; i++) lru.add(`k${i}`);
    expect([lru.size, lru.capacity]).toEqual([5000, 5000]);
    expect(lru.peek('k999')).toBe(NO_SLOT);
    expect(lru.get('k1000')).not.toBe(NO_SLOT);
    lru.add('new');
    expect(lru.peek('k1001')).toBe(NO_SLOT);
    expect(lru.peek('k1000')).not.toBe(NO_SLOT);
  });
});
