const FIRST_SLOTS = 1024;

/** What `get` and `peek` return for a key not held. */
export const NO_SLOT = -1;

/**
 * A strict least-recently-used index of at most `max` keys: the memory store's. Each key held
 * has a slot, a small integer under which the store keeps its state in flat arrays of its own;
 * a slot is reused after its key is deleted or evicted. A lookup is one `Map.get` and, unless
 * the key is already the newest, a relink of two 32-bit links; no options, no TTL, no status
 * objects. The arrays grow as keys arrive, by doubling up to `max` (not reserved up front), so
 * a full index of `max` keys holds no spare slots.
 *
 * The recency list is a ring (the oldest key's older link is the newest, and the other way
 * round): the oldest key becomes the newest by turning the ring, with no link written. That is
 * every eviction, and every use of a key seen once per round of all the keys held.
 */
export class LruIndex {
  private readonly slots = new Map<string, number>();
  private keys: (string | undefined)[] = new Array(FIRST_SLOTS);
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

  /** Slots the arrays hold now: every slot handed out is below it. */
  get capacity(): number {
    return this.newer.length;
  }

  /** The key's slot, the key now the most recently used; `NO_SLOT` when not held. */
  get(key: string): number {
    const slot = this.slots.get(key);
    if (slot === undefined) return NO_SLOT;
    if (slot === this.oldest) this.turn();
    else if (slot !== this.newest) {
      this.unlink(slot);
      this.linkNewest(slot);
    }
    return slot;
  }

  /** The key's slot, leaving its recency alone; `NO_SLOT` when not held. */
  peek(key: string): number {
    return this.slots.get(key) ?? NO_SLOT;
  }

  /**
   * Takes in a key not held, as the most recently used, and returns its slot: in a full index
   * the least recently used key's, whose key is pushed out. The slot's old state, if any, is
   * the caller's to overwrite.
   */
  add(key: string): number {
    let slot: number;
    if (this.slots.size === this.max) {
      slot = this.oldest;
      this.slots.delete(this.keys[slot] as string);
      this.keys[slot] = key;
      this.slots.set(key, slot);
      this.turn();
      return slot;
    }
    slot = this.freed.pop() ?? this.used++;
    if (slot >= this.newer.length) this.grow();
    this.keys[slot] = key;
    this.slots.set(key, slot);
    this.linkNewest(slot);
    return slot;
  }

  delete(key: string): void {
    const slot = this.slots.get(key);
    if (slot === undefined) return;
    this.slots.delete(key);
    this.unlink(slot);
    this.keys[slot] = undefined;
    this.freed.push(slot);
  }

  /** Makes the oldest key the newest: on a ring, only the ends move. */
  private turn(): void {
    this.newest = this.oldest;
    this.oldest = this.newer[this.oldest] as number;
  }

  /** Takes the slot out of the ring; the ring may be left empty. */
  private unlink(slot: number): void {
    const newer = this.newer[slot] as number;
    const older = this.older[slot] as number;
    this.newer[older] = newer;
    this.older[newer] = older;
    if (slot === this.oldest) this.oldest = newer;
    if (slot === this.newest) this.newest = older;
  }

  /** Links the slot in as the newest, between the newest and the oldest; `slots` already counts it. */
  private linkNewest(slot: number): void {
    if (this.slots.size === 1) {
      this.oldest = slot;
      this.newer[slot] = slot;
      this.older[slot] = slot;
    } else {
      this.newer[this.newest] = slot;
      this.older[slot] = this.newest;
      this.newer[slot] = this.oldest;
      this.older[this.oldest] = slot;
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
    this.keys = grown(this.keys, size);
  }
}

/** The array's values in a new one of `size` slots, allocated once at that size. */
export function grown<T>(from: readonly T[], size: number): T[] {
  const to = new Array<T>(size);
  for (let i = 0; i < from.length; i++) to[i] = from[i] as T;
  return to;
}
