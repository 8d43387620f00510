import { createLimiter, toPolicy } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import { createLayouts, MAX_LAYOUTS } from '../../../packages/core/src/memory-store/layouts.js';
import { type MemoryStore, memoryStoreOver } from '../../../packages/core/src/memory-store/memory-store.js';
import { MemoryTable } from '../../../packages/core/src/memory-store/table.js';
import { manualClock } from '../../helpers/clock.js';

// A client known to one one-policy limiter sits in a row of the table; any other is spilled
// into an entry of its own. Each move between the two forms must keep every count, and an
// entry must go when its client does.
const spilledOf = (table: MemoryTable) =>
  (table as unknown as { spilled: unknown[] }).spilled.filter((entry) => entry !== undefined);

function storeOver(maxKeys: number) {
  const table = new MemoryTable(maxKeys);
  return { table, store: memoryStoreOver(table) };
}

/** Decides once under each of MAX_LAYOUTS new policy sets: enough to push every older layout out. */
function pushLayoutsOut(store: MemoryStore, now: number): void {
  for (let n = 0; n < MAX_LAYOUTS; n++) {
    const policies = [toPolicy({ name: 'p', limit: 1 + (n % 7), window: 60_000 }, 'policies[0]')];
    store.consumeSync({ namespace: `other-${n}`, key: 'elsewhere', policies, capacities: [1], cost: 1, now });
  }
}

describe('clients kept in rows and spilled entries', () => {
  it('a second limiter spills the client, its reset puts it back in its row, and no count is lost', async () => {
    const { table, store } = storeOver(10);
    const clock = manualClock();
    const a = createLimiter({ limit: 5, window: '1m', algorithm: 'gcra', clock, store, prefix: 'a' });
    const b = createLimiter({ limit: 3, window: '1m', clock, store, prefix: 'b' });
    await a.consume('k', { cost: 2 });
    expect(spilledOf(table).length).toBe(0);
    await b.consume('k');
    expect(spilledOf(table).length).toBe(1);
    expect((await a.consume('k')).remaining).toBe(2);
    await b.reset('k');
    expect(spilledOf(table).length).toBe(0);
    expect((await a.consume('k')).remaining).toBe(1);
    expect((await b.peek('k')).remaining).toBe(3);
    expect(store.size).toBe(1);
  });

  it('an evicted spilled client takes its entry with it; the next client on its slot starts fresh', async () => {
    const { table, store } = storeOver(2);
    const clock = manualClock();
    const a = createLimiter({ limit: 5, window: '1m', clock, store, prefix: 'a' });
    const b = createLimiter({ limit: 5, window: '1m', algorithm: 'sliding-window-log', clock, store, prefix: 'b' });
    await a.consume('spilled', { cost: 4 });
    await b.consume('spilled', { cost: 4 });
    await a.consume('x');
    await a.consume('y');
    expect([store.size, store.evictions, spilledOf(table).length]).toEqual([2, 1, 0]);
    expect((await a.consume('z')).remaining).toBe(4);
    expect((await a.peek('spilled')).remaining).toBe(5);
    expect((await b.peek('spilled')).remaining).toBe(5);
  });

  it('a refund that brings a row back to fresh lets go of its client; a peek keeps it', async () => {
    const { table, store } = storeOver(10);
    const clock = manualClock();
    const limiter = createLimiter({ limit: 5, window: '1s', algorithm: 'gcra', clock, store });
    await limiter.consume('refunded', { cost: 2 });
    await limiter.refund('refunded', 2);
    await limiter.consume('expired');
    clock.advance(1_000);
    await limiter.peek('expired');
    expect([store.size, spilledOf(table).length]).toEqual([1, 0]);
  });

  it('a row of a forgotten layout reads as no state when another limiter decides on its client', () => {
    const { store } = storeOver(10);
    const decide = (namespace: string, limit: number, key = 'k') => {
      const policies = [toPolicy({ name: 'p', limit, window: 60_000 }, 'policies[0]')];
      const capacities = [limit];
      return store.consumeSync({ namespace, key, policies, capacities, cost: 1, now: 0 }).outcomes[0]?.remaining;
    };
    expect(decide('first', 5)).toBe(4);
    // Enough other layouts that the first is forgotten.
    for (let n = 0; n < MAX_LAYOUTS; n++) decide(`other-${n}`, 1 + (n % 7), 'elsewhere');
    expect(decide('second', 3)).toBe(2);
    // The first limiter's state went with its layout: it starts again from a full quota.
    expect(decide('first', 5)).toBe(4);
    expect(store.size).toBe(2);
  });

  it("a limiter whose layout the bound forgot while it was in use keeps its clients' counts", async () => {
    const { store } = storeOver(100);
    const clock = manualClock();
    const limiter = createLimiter({ limit: 5, window: '1h', algorithm: 'fixed-window', clock, store, prefix: 'live' });
    for (let i = 0; i < 4; i++) await limiter.consume('k');
    // Per-request policy sets, tiers or rules reloads push the live limiter's layout out.
    pushLayoutsOut(store, clock());
    await limiter.refund('k', 1);
    expect((await limiter.peek('k')).remaining).toBe(2);
  });
});

describe('the layout a store keeps for its last one-policy request', () => {
  it('is asked for again once the bound forgot it, so another limiter on the client keeps its count', async () => {
    const table = new MemoryTable(100);
    const store = memoryStoreOver(table);
    const other = memoryStoreOver(table);
    const clock = manualClock();
    const live = createLimiter({ limit: 5, window: '1h', algorithm: 'fixed-window', clock, store, prefix: 'live' });
    const next = createLimiter({ limit: 5, window: '1h', clock, store, prefix: 'next' });
    for (let i = 0; i < 3; i++) await live.consume('k');
    // Another store over the same table pushes the live limiter's layout out of the bound.
    pushLayoutsOut(other, clock());
    await live.consume('k');
    // Had the store decided on its kept layout, still forgotten, this would read the client's
    // row as no state and drop it.
    await next.consume('k');
    expect((await live.peek('k')).remaining).toBe(1);
  });

  it('a layout in use stays known while other limiters come and go on its clients', async () => {
    const store = memoryStoreOver(new MemoryTable(1000));
    const clock = manualClock();
    const global = createLimiter({ limit: 9, window: '1h', algorithm: 'fixed-window', clock, store, prefix: 'global' });
    await global.consume('ip');
    // Per-tier limiters keyed by the same client address, twice the bound of them; the global
    // limiter decides now and then, as it does on every request of a real app.
    for (let n = 0; n < 2 * MAX_LAYOUTS; n++) {
      const tier = createLimiter({ limit: 1 + n, window: '1m', clock, store, prefix: `tier-${n}` });
      await tier.consume('ip');
      if (n % 1000 === 999) await global.consume('ip');
    }
    expect((await global.peek('ip')).remaining).toBe(9 - 1 - Math.floor((2 * MAX_LAYOUTS) / 1000));
  });

  it('asks for a layout again once half its bound of others were filed since, and once forgotten', () => {
    const policiesOf = () => [toPolicy({ name: 'p', limit: 5, window: 60_000 }, 'policies[0]')];
    for (const max of [4, 5, 8]) {
      const layouts = createLayouts(max);
      const mine = layouts.of('mine', policiesOf());
      const half = Math.floor(max / 2);
      for (let n = 1; n < half; n++) layouts.of(`other-${n}`, policiesOf());
      expect(layouts.stale(mine)).toBe(false);
      layouts.of(`other-${half}`, policiesOf());
      expect(layouts.stale(mine)).toBe(true);
      // Filed again, it is fresh; then pushed out by a bound of others, it stays stale.
      const again = layouts.of('mine', mine.policies);
      expect(layouts.stale(again)).toBe(false);
      for (let n = 0; n < max; n++) layouts.of(`flood-${n}`, policiesOf());
      expect(again.forgotten).toBe(true);
      expect(layouts.stale(again)).toBe(true);
    }
  });

  it('never knows more than its bound of layouts, whatever order limiters come in', () => {
    const max = 4;
    const layouts = createLayouts(max);
    const policiesOf = () => [toPolicy({ name: 'p', limit: 5, window: 60_000 }, 'policies[0]')];
    const ids: number[] = [];
    let other = 0;
    const flood = () => {
      for (let i = 0; i < max; i++) layouts.of(`other-${other++}`, policiesOf());
    };
    for (let round = 0; round < 10; round++) {
      const old = policiesOf();
      layouts.of(`shared-${round}`, old); // a limiter in use
      flood(); // its layout forgotten
      ids.push(layouts.of(`shared-${round}`, policiesOf()).id); // a new limiter of the same prefix and policies
      layouts.of(`shared-${round}`, old); // the old one decides again
    }
    flood();
    flood();
    expect(layouts.size).toBeLessThanOrEqual(max);
    expect(ids.filter((id) => layouts.byId(id) !== undefined)).toEqual([]);
  });
});
