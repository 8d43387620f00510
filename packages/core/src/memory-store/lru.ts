const FIRST_SLOTS = 1024;

/**
 * A strict least-recently-used map of at most `max` keys: the memory store's index. Only what
 * the store needs, so a lookup is one `Map.get` and, unless the key is already the newest, a
 * relink of two 32-bit links; no options, no TTL, no status objects. Each key has a slot: its
 * key, value and links sit at that index in flat arrays, which grow as keys arrive (not
 * reserved for `max` up front) and are reused after a delete.
 */
export class LruMap<V> {
  private readonly slots = new Map<string, number>();
  // Grown together, by doubling up to `max`: a full map of `max` keys holds no spare slots.
  private keys: (string | undefined)[] = new Array(FIRST_SLOTS);
  private values: (V | undefined)[] = new Array(FIRST_SLOTS);
  private newer = new Uint32Array(FIRST_SLOTS);
  private older = new Uint32Array(FIRST_SLOTS);
  /** Slots handed out so far; those below it and not in `freed` are in use. */
  private used = 0;
  private newest = 0;
  private oldest = 0;
  private readonly freed: number[] = [];

  constructor(readonly max: number) {}

  get size(): number {
    return this.slots.size;
  }

  /** The value, now the most recently used. */
  get(key: string): V | undefined {
    const slot = this.slots.get(key);
    if (slot === undefined) return undefined;
    if (slot !== this.newest) {
      this.unlink(slot);
      this.linkNewest(slot);
    }
    return this.values[slot];
  }

  /** The value, leaving its recency alone. */
  peek(key: string): V | undefined {
    const slot = this.slots.get(key);
    return slot === undefined ? undefined : this.values[slot];
  }

  /** Sets the value, now the most recently used; a new key pushes the least recently used one out of a full map. */
  set(key: string, value: V): void {
    let slot = this.slots.get(key);
    if (slot !== undefined) {
      this.values[slot] = value;
      if (slot !== this.newest) {
        this.unlink(slot);
        this.linkNewest(slot);
      }
      return;
    }
    if (this.slots.size === this.max) {
      slot = this.oldest;
      this.slots.delete(this.keys[slot] as string);
      this.unlink(slot);
    } else {
      slot = this.freed.pop() ?? this.used++;
    }
    if (slot >= this.newer.length) this.grow();
    this.keys[slot] = key;
    this.values[slot] = value;
    this.slots.set(key, slot);
    this.linkNewest(slot);
  }

  delete(key: string): void {
    const slot = this.slots.get(key);
    if (slot === undefined) return;
    this.slots.delete(key);
    this.unlink(slot);
    this.keys[slot] = undefined;
    this.values[slot] = undefined;
    this.freed.push(slot);
  }

  /** Takes the slot out of the recency list; the list may be left empty. */
  private unlink(slot: number): void {
    if (slot === this.oldest) this.oldest = this.newer[slot] as number;
    else this.newer[this.older[slot] as number] = this.newer[slot] as number;
    if (slot === this.newest) this.newest = this.older[slot] as number;
    else this.older[this.newer[slot] as number] = this.older[slot] as number;
  }

  /** Links the slot in as the newest; `slots` already counts it. */
  private linkNewest(slot: number): void {
    if (this.slots.size === 1) {
      this.oldest = slot;
    } else {
      this.newer[this.newest] = slot;
      this.older[slot] = this.newest;
    }
    this.newest = slot;
  }

  private grow(): void {
    const size = Math.min(this.max, this.newer.length * 2);
    const newer = new Uint32Array(size);
    const older = new Uint32Array(size);
    newer.set(this.newer);
    older.set(this.older);
    this.newer = newer;
    this.older = older;
    this.keys = copied(this.keys, size);
    this.values = copied(this.values, size);
  }
}

/** The array's values in a new one of `size` slots, allocated once at that size. */
function copied<T>(from: readonly T[], size: number): T[] {
  const to = new Array<T>(size);
  for (let i = 0; i < from.length; i++) to[i] = from[i] as T;
  return to;
}
