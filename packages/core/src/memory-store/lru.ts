import { isHashedKey } from '../store-key.js';

// Room for the first clients only: every limiter given no store has an index of its own, and
// most see few clients. The arrays double as keys arrive (at 100 000 keys, 11 doublings in all).
const FIRST_SLOTS = 64;

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
 * Its keys are keys `storeKey` returned: kept as the client gave them, or hashed. The two are
 * held in maps of their own, so that a key as a client gave it is looked up among the kept ones
 * alone (`getAsGiven`), where its text finds its own state or none: never that of a client
 * whose key was hashed to the same text. Checking the text for the hash's mark first cost each
 * decision some 50 instructions.
 *
 * The recency list is a ring (the oldest key's older link is the newest, and the other way
 * round): the oldest key becomes the newest by turning the ring, with no link written. That is
 * every eviction, and every use of a key seen once per round of all the keys held.
 */
export class LruIndex {
  private readonly kept = new Map<string, number>();
  private readonly hashed = new Map<string, number>();
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
    return this.kept.size + this.hashed.size;
  }

  /** Slots the arrays hold now: every slot handed out is below it. */
  get capacity(): number {
    return this.newer.length;
  }

  /** The key's slot, the key now the most recently used; `NO_SLOT` when not held. */
  get(key: string): number {
    return this.use(this.mapOf(key).get(key));
  }

  /**
   * The slot of a key as a client gave it, when it is held as given (`storeKey` returns it
   * unchanged), the key now the most recently used; else `NO_SLOT`, and the caller looks up
   * what `storeKey` makes of it.
   */
  getAsGiven(given: string): number {
    return this.use(this.kept.get(given));
  }

  /** The key's slot, leaving its recency alone; `NO_SLOT` when not held. */
  peek(key: string): number {
    return this.mapOf(key).get(key) ?? NO_SLOT;
  }

  /**
   * Takes in a key not held, as the most recently used, and returns its slot: in a full index
   * the least recently used key's, whose key is pushed out. The slot's old state, if any, is
   * the caller's to overwrite.
   */
  add(key: string): number {
    let slot: number;
    if (this.size === this.max) {
      slot = this.oldest;
      const evicted = this.keys[slot] as string;
      this.mapOf(evicted).delete(evicted);
      this.keys[slot] = key;
      this.mapOf(key).set(key, slot);
      // The oldest slot made the newest: the ring turns.
      return this.use(slot);
    }
    slot = this.freed.pop() ?? this.used++;
    if (slot >= this.newer.length) this.grow();
    this.keys[slot] = key;
    this.mapOf(key).set(key, slot);
    this.linkNewest(slot);
    return slot;
  }

  delete(key: string): void {
    const map = this.mapOf(key);
    const slot = map.get(key);
    if (slot === undefined) return;
    map.delete(key);
    this.unlink(slot);
    this.keys[slot] = undefined;
    this.freed.push(slot);
  }

  /** The map a key `storeKey` returned is held in. */
  private mapOf(key: string): Map<string, number> {
    return isHashedKey(key) ? this.hashed : this.kept;
  }

  /**
   * A held key's slot made the most recently used; `NO_SLOT` for none. The oldest becomes the
   * newest by turning the ring: only the ends move. (Written here, not as a method of its own:
   * one call deeper, the optimising compiler stopped inlining on a decision's path, some 50
   * instructions a decision.)
   */
  private use(slot: number | undefined): number {
    if (slot === undefined) return NO_SLOT;
    if (slot === this.oldest) {
      this.newest = slot;
      this.oldest = this.newer[slot] as number;
    } else if (slot !== this.newest) {
      this.unlink(slot);
      this.linkNewest(slot);
    }
    return slot;
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

  /** Links the slot in as the newest, between the newest and the oldest; `size` already counts it. */
  private linkNewest(slot: number): void {
    if (this.size === 1) {
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
