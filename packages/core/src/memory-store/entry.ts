import type { State } from '../algorithms/index.js';
import type { AlgorithmName, Policy } from '../types.js';

/**
 * One LRU entry holds every limiter's state for one client key, as a flat array of numbers:
 * V8 keeps it as a single array of unboxed doubles, which is what makes a tracked key cost
 * about 120 bytes and lets a decision update it in place without allocating.
 *
 * Layout: segments back to back, one per limiter namespace:
 *   [layout id, length, …state of policy 0, …state of policy 1, …]
 * `length` counts the values after it; the layout (see `Layout`) names the namespace and the
 * policies in order. Every algorithm's state has a fixed size except the sliding log, stored
 * as [entryCount, t1, cost1, …].
 */
export type Entry = number[];

/** Values before a segment's states. */
export const HEAD = 2;

const fixedSize: Record<Exclude<AlgorithmName, 'sliding-window-log'>, number> = {
  'token-bucket': 2,
  'leaky-bucket': 2,
  gcra: 2,
  'fixed-window': 2,
  'sliding-window-counter': 3,
};

const sizeAt = (entry: Entry, at: number, algorithm: AlgorithmName): number =>
  algorithm === 'sliding-window-log' ? 1 + 2 * (entry[at] as number) : fixedSize[algorithm];

/** The number of values after the segment's head at `at`. */
const lengthAt = (entry: Entry, at: number): number => entry[at + 1] as number;

/** Offset of the segment of this layout, or -1. */
export function findSegment(entry: Entry, layoutId: number): number {
  for (let at = 0; at < entry.length; at += HEAD + lengthAt(entry, at)) {
    if (entry[at] === layoutId) return at;
  }
  return -1;
}

/** Every segment's offset and layout id, first to last. */
export function segmentsOf(entry: Entry): [at: number, layoutId: number][] {
  const found: [number, number][] = [];
  for (let at = 0; at < entry.length; at += HEAD + lengthAt(entry, at)) found.push([at, entry[at] as number]);
  return found;
}

/** The policies' states from the segment at `at`. */
export function readStates(entry: Entry, at: number, policies: readonly Policy[]): State[] {
  const states: State[] = [];
  let offset = at + HEAD;
  for (const policy of policies) {
    states.push(readState(entry, offset, policy.algorithm));
    offset += sizeAt(entry, offset, policy.algorithm);
  }
  return states;
}

/** The state stored at `offset`: the first policy's state is at `at + 2`. */
export function readState(entry: Entry, offset: number, algorithm: AlgorithmName): State {
  const end = offset + sizeAt(entry, offset, algorithm);
  return algorithm === 'sliding-window-log' ? entry.slice(offset + 1, end) : entry.slice(offset, end);
}

/** Writes the segment, in place when its length is unchanged; returns the entry to keep. */
export function writeSegment(
  entry: Entry | undefined,
  at: number,
  layoutId: number,
  states: readonly State[],
  policies: readonly Policy[],
): Entry {
  let length = 0;
  for (let i = 0; i < policies.length; i++)
    length += storedLength((policies[i] as Policy).algorithm, states[i] as State);
  if (entry !== undefined && at >= 0 && lengthAt(entry, at) === length) {
    put(entry, at + HEAD, states, policies);
    return entry;
  }
  // Sized up front: an array grown one index at a time reserves many spare slots per key.
  const segment: Entry = new Array<number>(HEAD + length);
  segment[0] = layoutId;
  segment[1] = length;
  put(segment, HEAD, states, policies);
  if (entry === undefined) return segment;
  if (at < 0) entry.push(...segment);
  else entry.splice(at, HEAD + lengthAt(entry, at), ...segment);
  return entry;
}

/**
 * Writes a one-policy segment's state in place, as `writeSegment` would but without its
 * arrays: the usual case of a charged request. False when the entry must be reshaped instead.
 */
export function overwriteState(entry: Entry | undefined, at: number, state: State, algorithm: AlgorithmName): boolean {
  if (entry === undefined || at < 0 || lengthAt(entry, at) !== storedLength(algorithm, state)) return false;
  putState(entry, at + HEAD, state, algorithm);
  return true;
}

const storedLength = (algorithm: AlgorithmName, state: State): number =>
  algorithm === 'sliding-window-log' ? 1 + state.length : state.length;

function put(entry: Entry, offset: number, states: readonly State[], policies: readonly Policy[]): void {
  for (let i = 0; i < policies.length; i++) {
    offset = putState(entry, offset, states[i] as State, (policies[i] as Policy).algorithm);
  }
}

/** Writes one state at `offset`; returns the offset after it. */
function putState(entry: Entry, offset: number, state: State, algorithm: AlgorithmName): number {
  if (algorithm === 'sliding-window-log') entry[offset++] = state.length / 2;
  for (let j = 0; j < state.length; j++) entry[offset++] = state[j] as number;
  return offset;
}

/** Removes the segment; returns false when the entry is left empty. */
export function removeSegment(entry: Entry, at: number): boolean {
  entry.splice(at, HEAD + lengthAt(entry, at));
  return entry.length > 0;
}
