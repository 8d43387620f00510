import type { State, Values } from '../algorithms/index.js';
import { type Entry, HEAD } from './entry.js';
import { createLayouts, type Layout, type Layouts } from './layouts.js';
import { grown, LruIndex, NO_SLOT } from './lru.js';

/** State values a row holds: the most any one policy of fixed size needs (the sliding window counter's). */
const ROW_VALUES = 3;
const STRIDE = 1 + ROW_VALUES;
/** A row's first value when its client's entry is held whole in `spilled` instead. */
const SPILLED = -1;

/**
 * Whether a client whose only state is this layout's is kept in a row: one policy of fixed
 * size, of 2 or 3 values (every fixed-size algorithm's), which rows read and write unrolled.
 */
export const fitsRow = (layout: Layout): boolean => !layout.logs && layout.length >= 2 && layout.length <= ROW_VALUES;

/**
 * What a memory store keeps over its LRU index: the client keys, their states, the layouts of
 * those states, and the evictions.
 *
 * Nearly every client is known to one limiter of one policy, whose state is two or three
 * numbers. Such a client's state sits in a row of one shared Float64Array, at its slot in the
 * index: its layout id, then the values. That costs 32 bytes of the process's memory outside
 * the V8 heap, where an array of its own would cost about 80 on the heap. A client with
 * anything more (several limiters, several policies, a sliding log) has its whole entry, in
 * the general form `entry.ts` describes, held in `spilled`, and its row says so.
 */
export class MemoryTable {
  readonly index: LruIndex;
  readonly layouts: Layouts = createLayouts();
  /** Keys evicted so far to stay within the bound. */
  evictions = 0;
  /**
   * By slot: the layout id of the client's one segment and its state values, or `SPILLED`. The
   * one-policy path decides on a row's state where it is (`stateAt`); replaced as the index
   * grows, so read it for each decision.
   */
  rows: Float64Array;
  /**
   * By slot: the spilled entries. Allocated at the first spill, then grown with the index: a
   * table of one-policy clients pays nothing for it, and a table with spills 8 bytes a slot,
   * less than a map from slot to entry would cost per spilled client.
   */
  private spilled: (Entry | undefined)[] = [];

  constructor(maxKeys: number) {
    this.index = new LruIndex(maxKeys);
    this.rows = new Float64Array(this.index.capacity * STRIDE);
  }

  /** Whether the slot's client has exactly one segment, of this layout, held in its row. */
  holds(slot: number, layoutId: number): boolean {
    return this.rows[slot * STRIDE] === layoutId;
  }

  /** Where the slot's row state starts in `rows`; `holds` said it is there. */
  stateAt(slot: number): number {
    return slot * STRIDE + 1;
  }

  /**
   * The row's state copied into `into` (its length is the state's size, 2 or 3: see `fitsRow`);
   * `holds` said it is there. Unrolled: a loop re-checked both arrays on every value.
   */
  readRow<V extends Values>(slot: number, into: V): V {
    const { rows } = this;
    const at = this.stateAt(slot);
    into[0] = rows[at] as number;
    into[1] = rows[at + 1] as number;
    if (into.length === 3) into[2] = rows[at + 2] as number;
    return into;
  }

  /** Makes `state` (2 or 3 values) the slot's one segment, of this layout, in its row; the layout fits a row. */
  writeRow(slot: number, layoutId: number, state: State | Float64Array): void {
    const { rows } = this;
    const at = slot * STRIDE;
    if (rows[at] === SPILLED) this.unspill(slot);
    rows[at] = layoutId;
    rows[at + 1] = state[0] as number;
    rows[at + 2] = state[1] as number;
    if (state.length === 3) rows[at + 3] = state[2] as number;
  }

  /** A slot for a key not held yet: in a full index, the least recently used key's, which is evicted. */
  add(key: string): number {
    if (this.index.size === this.index.max) this.evictions++;
    const slot = this.index.add(key);
    if (slot * STRIDE >= this.rows.length) this.grow();
    else if (this.rows[slot * STRIDE] === SPILLED) this.unspill(slot);
    return slot;
  }

  /** Lets go of the key and all its state. */
  drop(key: string, slot: number): void {
    this.index.delete(key);
    if (this.rows[slot * STRIDE] === SPILLED) this.unspill(slot);
    // Until the slot is handed out again, its row matches no layout.
    this.rows[slot * STRIDE] = SPILLED;
  }

  /**
   * The client's entry in the general form: the spilled one itself, or a new array for a row.
   * A row of a forgotten layout reads as no segment, as in the general form such a segment is
   * dropped when its client is next decided on.
   */
  entryAt(slot: number): Entry {
    const at = slot * STRIDE;
    const id = this.rows[at] as number;
    if (id === SPILLED) return this.spilled[slot] as Entry;
    const layout = this.layouts.byId(id);
    if (layout === undefined) return [];
    const entry: Entry = new Array<number>(HEAD + layout.length);
    entry[0] = id;
    entry[1] = layout.length;
    for (let j = 0; j < layout.length; j++) entry[HEAD + j] = this.rows[at + 1 + j] as number;
    return entry;
  }

  /** The slot's entry when it is spilled, held whole; `undefined` when its client sits in a row. */
  spilledAt(slot: number): Entry | undefined {
    return this.rows[slot * STRIDE] === SPILLED ? this.spilled[slot] : undefined;
  }

  /**
   * Keeps `entry` as the client's, `slot` being its slot or `NO_SLOT` for a key not held yet:
   * in its row when it is one segment that fits one, spilled otherwise. An empty entry lets go
   * of the key.
   */
  keep(key: string, slot: number, entry: Entry): void {
    if (entry.length === 0) {
      if (slot !== NO_SLOT) this.drop(key, slot);
      return;
    }
    const held = slot === NO_SLOT ? this.add(key) : slot;
    const layout = this.layouts.byId(entry[0] as number);
    if (layout !== undefined && fitsRow(layout) && entry.length === HEAD + layout.length) {
      this.writeRow(held, layout.id, entry.slice(HEAD));
      return;
    }
    this.rows[held * STRIDE] = SPILLED;
    if (held >= this.spilled.length) this.spilled = grown(this.spilled, this.index.capacity);
    this.spilled[held] = entry;
  }

  /** Forgets the slot's spilled entry (a slot marked `SPILLED` but never spilled has none to forget). */
  private unspill(slot: number): void {
    if (slot < this.spilled.length) this.spilled[slot] = undefined;
  }

  private grow(): void {
    const rows = new Float64Array(this.index.capacity * STRIDE);
    rows.set(this.rows);
    this.rows = rows;
  }
}
