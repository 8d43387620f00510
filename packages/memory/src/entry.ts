import type { AlgorithmName, Policy, State } from '@sluice/core';

/**
 * One LRU entry holds every limiter's state for one client key, as a flat array of numbers:
 * V8 keeps it as a single array of unboxed doubles, which is what makes a tracked key cost
 * about 110 bytes and lets a decision update it in place without allocating.
 *
 * Layout: segments back to back, one per limiter namespace:
 *   [header, …state of policy 0, …state of policy 1, …]
 * header = namespace id + HEADER_LENGTH_UNIT × (number of values after the header).
 * Every algorithm's state has a fixed size except the sliding log, stored as
 * [entryCount, t1, cost1, …].
 */
export type Entry = number[];

const HEADER_LENGTH_UNIT = 2 ** 20;
export const MAX_NAMESPACES = HEADER_LENGTH_UNIT;

const fixedSize: Record<Exclude<AlgorithmName, 'sliding-window-log'>, number> = {
  'token-bucket': 2,
  'leaky-bucket': 2,
  gcra: 2,
  'fixed-window': 2,
  'sliding-window-counter': 3,
};

const sizeAt = (entry: Entry, at: number, algorithm: AlgorithmName): number =>
  algorithm === 'sliding-window-log' ? 1 + 2 * (entry[at] as number) : fixedSize[algorithm];

/** The number of values after the header at `at`. */
const lengthAt = (entry: Entry, at: number): number => Math.floor((entry[at] as number) / HEADER_LENGTH_UNIT);

/** Offset of the namespace's header, or -1. */
export function findSegment(entry: Entry, namespaceId: number): number {
  for (let at = 0; at < entry.length; ) {
    const length = lengthAt(entry, at);
    // `header % HEADER_LENGTH_UNIT` without `%`, which V8 runs as a slow library call on doubles.
    if ((entry[at] as number) - length * HEADER_LENGTH_UNIT === namespaceId) return at;
    at += 1 + length;
  }
  return -1;
}

/** The policies' states from the segment whose header is at `at`. */
export function readStates(entry: Entry, at: number, policies: readonly Policy[]): State[] {
  const states: State[] = [];
  let offset = at + 1;
  for (const policy of policies) {
    states.push(readState(entry, offset, policy.algorithm));
    offset += sizeAt(entry, offset, policy.algorithm);
  }
  return states;
}

/** The state stored at `offset`: the first policy's state is at `at + 1`. */
export function readState(entry: Entry, offset: number, algorithm: AlgorithmName): State {
  const end = offset + sizeAt(entry, offset, algorithm);
  return algorithm === 'sliding-window-log' ? entry.slice(offset + 1, end) : entry.slice(offset, end);
}

/** Writes the segment, in place when its length is unchanged; returns the entry to keep. */
export function writeSegment(
  entry: Entry | undefined,
  at: number,
  namespaceId: number,
  states: readonly State[],
  policies: readonly Policy[],
): Entry {
  let length = 0;
  for (let i = 0; i < policies.length; i++)
    length += storedLength((policies[i] as Policy).algorithm, states[i] as State);
  if (entry !== undefined && at >= 0 && lengthAt(entry, at) === length) {
    put(entry, at + 1, states, policies);
    return entry;
  }
  // Sized up front: an array grown one index at a time reserves many spare slots per key.
  const segment: Entry = new Array<number>(1 + length);
  segment[0] = namespaceId + HEADER_LENGTH_UNIT * length;
  put(segment, 1, states, policies);
  if (entry === undefined) return segment;
  if (at < 0) entry.push(...segment);
  else entry.splice(at, 1 + lengthAt(entry, at), ...segment);
  return entry;
}

/**
 * Writes a one-policy segment's state in place, as `writeSegment` would but without its
 * arrays: the usual case of a charged request. False when the entry must be reshaped instead.
 */
export function overwriteState(entry: Entry | undefined, at: number, state: State, algorithm: AlgorithmName): boolean {
  if (entry === undefined || at < 0 || lengthAt(entry, at) !== storedLength(algorithm, state)) return false;
  putState(entry, at + 1, state, algorithm);
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
  entry.splice(at, 1 + lengthAt(entry, at));
  return entry.length > 0;
}
