import { type ConvertedState, convertStateWithReset } from '../algorithms/index.js';
import type { Policy } from '../types.js';
import { type Entry, readStates, removeSegment, segmentsOf } from './entry.js';
import type { Layout, Layouts } from './layouts.js';
import { type MemoryState, memoryAlgorithms } from './sliding-log.js';

/** What another version of a limiter left for one client, read by this version. */
export interface TakenOver {
  /** This layout's states, slot by slot; `undefined` where no version had state. */
  readonly states: readonly (MemoryState | undefined)[];
  /** Slot by slot, what a converted state was read from (`settleConvertedWaits`); `undefined` if not converted. */
  readonly converted: readonly (ConvertedState<MemoryState> | undefined)[];
  /** Slots this layout lacks, kept as they are for the version that has them. */
  readonly extras: readonly Policy[];
  readonly extraStates: readonly MemoryState[];
  /** Segments to drop once this version writes: last first, so offsets stay valid. */
  readonly offsets: readonly number[];
}

/**
 * The client has no segment of this layout: read what other versions of the limiter left
 * under the same namespace (SPEC §4: state is kept per policy name), converting the states of
 * another limit, window or algorithm. Nothing else changes until this version writes, so a
 * refused request leaves the other version's state as it is. Segments of forgotten layouts
 * can never be read again and are dropped at once. `undefined` when no other version left
 * anything.
 */
export function takeOver(entry: Entry, layout: Layout, layouts: Layouts, now: number): TakenOver | undefined {
  const mine = layout.policies;
  const states: (MemoryState | undefined)[] = mine.map(() => undefined);
  const converted: (ConvertedState<MemoryState> | undefined)[] = mine.map(() => undefined);
  const extras: Policy[] = [];
  const extraStates: MemoryState[] = [];
  const offsets: number[] = [];
  let found = false;
  for (const [at, id] of segmentsOf(entry).reverse()) if (layouts.byId(id) === undefined) removeSegment(entry, at);
  for (const [at, id] of segmentsOf(entry).reverse()) {
    const other = layouts.byId(id) as Layout;
    if (other.namespace !== layout.namespace) continue;
    offsets.push(at);
    found = true;
    const read = readStates(entry, at, other.policies);
    other.policies.forEach((from, j) => {
      const i = mine.findIndex((p) => p.slot === from.slot);
      if (i < 0) {
        extras.push(from);
        extraStates.push(read[j] as MemoryState);
      } else if (states[i] === undefined) {
        const to = mine[i] as Policy;
        if (from.version === to.version) {
          states[i] = read[j];
        } else {
          converted[i] = convertStateWithReset(read[j], from, to, now, memoryAlgorithms);
          states[i] = converted[i]?.state;
        }
      }
    });
  }
  return found ? { states, converted, extras, extraStates, offsets } : undefined;
}
