import type { EvaluateAt } from '../algorithms/algorithm.js';
import { algorithms, type State } from '../algorithms/index.js';
import type { AlgorithmName, Policy } from '../types.js';
import { type LogBuffer, LogCharge, type MemoryState } from './sliding-log.js';

/**
 * A client's entry in its general form: every limiter's state for one client key, as a flat
 * array of numbers that V8 keeps as one array of unboxed doubles, updated in place. Most
 * clients need less and sit in a row of the table instead (see `MemoryTable`); this form holds
 * a client with several segments or a log, and is how every path but the one-policy one reads
 * a client.
 *
 * Layout: segments back to back, one per limiter namespace:
 *   [layout id, length, …state of policy 0, …state of policy 1, …]
 * `length` counts the values after it; the layout (see `Layout`) names the namespace and the
 * policies in order. Every algorithm's state has a fixed size except the sliding log's, which
 * takes no values there: its log lives in `logs`, filed under the segment's layout id and the
 * policy's index, so that a decision appends to it instead of copying it. The logs go with
 * the entry when it is evicted.
 */
export type Entry = number[] & { logs?: FiledLogs };

/**
 * A client's logs: layout id, policy index and log, triple after triple. A client has a log
 * or two, so a search is as quick as a map lookup, and a client pays for no map: its memory
 * is what a sliding-window-log limiter costs per client.
 */
type FiledLogs = (number | LogBuffer)[];

/** Where policy `index`'s log of layout `layoutId` is filed in `logs`, or -1. */
function logAt(logs: FiledLogs, layoutId: number, index: number): number {
  for (let i = 0; i < logs.length; i += 3) if (logs[i] === layoutId && logs[i + 1] === index) return i + 2;
  return -1;
}

function logOf(entry: Entry, layoutId: number, index: number): LogBuffer | undefined {
  const { logs } = entry;
  const at = logs === undefined ? -1 : logAt(logs, layoutId, index);
  return at < 0 ? undefined : ((logs as FiledLogs)[at] as LogBuffer);
}

function fileLog(entry: Entry, layoutId: number, index: number, log: LogBuffer): void {
  const { logs } = entry;
  if (logs === undefined) {
    entry.logs = [layoutId, index, log];
    return;
  }
  const at = logAt(logs, layoutId, index);
  if (at < 0) logs.push(layoutId, index, log);
  else logs[at] = log;
}

function dropLogs(entry: Entry, layoutId: number): void {
  const { logs } = entry;
  if (logs === undefined) return;
  for (let i = logs.length - 3; i >= 0; i -= 3) if (logs[i] === layoutId) logs.splice(i, 3);
}

/** Values before a segment's states. */
export const HEAD = 2;

/** Values a policy's state takes in a segment, by algorithm: a log takes none. */
export const fixedSize: Readonly<Record<AlgorithmName, number>> = {
  'token-bucket': 2,
  'leaky-bucket': 2,
  gcra: 2,
  'fixed-window': 2,
  'sliding-window-counter': 3,
  'sliding-window-log': 0,
};

/**
 * How the algorithm of a policy whose state is of fixed size decides on it: in place. Every
 * algorithm has `evaluateAt` but the sliding log, whose state takes no values in a segment.
 */
export const inPlace = (policy: Policy): EvaluateAt => algorithms[policy.algorithm].evaluateAt as EvaluateAt;

/** The number of values after a segment's head for these policies: a log takes none. */
export function segmentLength(policies: readonly Policy[]): number {
  let length = 0;
  for (const policy of policies) length += fixedSize[policy.algorithm];
  return length;
}

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
export function readStates(entry: Entry, at: number, policies: readonly Policy[]): MemoryState[] {
  // Sized up front, as `decide` sizes its lists.
  const states = new Array<MemoryState>(policies.length);
  let offset = at + HEAD;
  for (let i = 0; i < policies.length; i++) {
    const { algorithm } = policies[i] as Policy;
    // Every write of a segment files its logs, so each is there.
    states[i] = readState(entry, at, i, offset, algorithm) as MemoryState;
    offset += fixedSize[algorithm];
  }
  return states;
}

/** The state of policy `index` of the segment at `at`, stored at `offset` (the first at `at + HEAD`). */
function readState(
  entry: Entry,
  at: number,
  index: number,
  offset: number,
  algorithm: AlgorithmName,
): MemoryState | undefined {
  if (algorithm === 'sliding-window-log') return logOf(entry, entry[at] as number, index);
  // Literals for the sizes there are, not `slice`: the builtin cost some 260 instructions a state.
  const size = fixedSize[algorithm];
  if (size === 2) return [entry[offset] as number, entry[offset + 1] as number];
  if (size === 3) return [entry[offset] as number, entry[offset + 1] as number, entry[offset + 2] as number];
  return entry.slice(offset, offset + size);
}

/** Writes the segment, in place when its length is unchanged; returns the entry to keep. */
export function writeSegment(
  entry: Entry | undefined,
  at: number,
  layoutId: number,
  states: readonly MemoryState[],
  policies: readonly Policy[],
): Entry {
  const length = segmentLength(policies);
  if (entry !== undefined && at >= 0 && lengthAt(entry, at) === length) {
    put(entry, at, states, policies);
    return entry;
  }
  // Sized up front: an array grown one index at a time reserves many spare slots per key.
  const segment: Entry = new Array<number>(HEAD + length);
  segment[0] = layoutId;
  segment[1] = length;
  let kept = segment;
  if (entry !== undefined) {
    if (at < 0) entry.push(...segment);
    else entry.splice(at, HEAD + lengthAt(entry, at), ...segment);
    kept = entry;
    at = at < 0 ? entry.length - segment.length : at;
  } else {
    at = 0;
  }
  put(kept, at, states, policies);
  return kept;
}

function put(entry: Entry, at: number, states: readonly MemoryState[], policies: readonly Policy[]): void {
  let offset = at + HEAD;
  for (let i = 0; i < policies.length; i++) {
    const { algorithm } = policies[i] as Policy;
    putState(entry, at, i, offset, states[i] as MemoryState, algorithm);
    offset += fixedSize[algorithm];
  }
}

/** Writes policy `index`'s state at `offset`, or files its log (applying a charge) under the segment. */
function putState(
  entry: Entry,
  at: number,
  index: number,
  offset: number,
  state: MemoryState,
  algorithm: AlgorithmName,
): void {
  if (algorithm === 'sliding-window-log') {
    const log = state instanceof LogCharge ? state.apply() : (state as LogBuffer);
    fileLog(entry, entry[at] as number, index, log);
    return;
  }
  const values = state as State;
  for (let j = 0; j < values.length; j++) entry[offset + j] = values[j] as number;
}

/** Removes the segment, and its logs; returns false when the entry is left empty. */
export function removeSegment(entry: Entry, at: number): boolean {
  dropLogs(entry, entry[at] as number);
  entry.splice(at, HEAD + lengthAt(entry, at));
  return entry.length > 0;
}
