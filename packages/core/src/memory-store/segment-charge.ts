import type { Policy, PolicyOutcome, StoreReply, StoreRequest } from '../types.js';
import {
  type Entry,
  findSegment,
  fixedSize as fixedSizeImport,
  HEAD as HEAD_IMPORT,
  inPlace as inPlaceImport,
} from './entry.js';
import type { Layout } from './layouts.js';
import { NO_SLOT as NO_SLOT_IMPORT } from './lru.js';
import type { MemoryTable } from './table.js';

// This module's own constants: optimised code reads one as its value, where it loads an
// imported binding and checks its temporal dead zone on every use.
const HEAD = HEAD_IMPORT;
const NO_SLOT = NO_SLOT_IMPORT;
const fixedSize = fixedSizeImport;
const inPlace = inPlaceImport;

/**
 * Where a segment's states are decided on: a copy, so that a refusal leaves the entry as it
 * was. Grown for a layout longer than any before; decisions are synchronous.
 */
const scratch = { values: new Float64Array(12) };

const newOutcome = (): PolicyOutcome => ({
  allowed: false,
  remaining: 0,
  resetAfterMs: 0,
  retryAfterMs: 0,
  delayMs: 0,
});

/**
 * A charge (cost ≥ 1) of several policies whose states are all of fixed size, decided on the
 * states where they sit: the spilled segment of this layout of the client at `slot`, or for a
 * key not held (`NO_SLOT`) fresh states, the key (a safe one) taken in when charged. It
 * decides as the reference `decide` does, without its copies: every policy decides in place
 * on one copy of the segment, which is written back only when all allow, and a refusal
 * reports each policy that allowed as it stands, uncharged. Nothing is allocated but the
 * reply (and a new key's entry). `undefined` for what the general path decides
 * (`decideOnEntry`): a peek, a log, a client held in a row, or a client whose states are
 * another version's, which it takes over.
 */
export function chargeSegment(
  table: MemoryTable,
  request: StoreRequest,
  key: string,
  layout: Layout,
  slot: number,
  now: number,
): StoreReply | undefined {
  const { policies, capacities, cost } = request;
  if (cost === 0 || layout.logs) return undefined;
  const entry = slot === NO_SLOT ? undefined : table.spilledAt(slot);
  // A client of a limiter of several policies mostly has that limiter's segment alone.
  const at = entry === undefined ? -1 : entry[0] === layout.id ? 0 : findSegment(entry, layout.id);
  if (slot !== NO_SLOT && at < 0) return undefined;
  const { length } = layout;
  if (scratch.values.length < length) scratch.values = new Float64Array(length);
  const { values } = scratch;
  const start = at + HEAD;
  const fresh = entry === undefined;
  if (!fresh) for (let j = 0; j < length; j++) values[j] = entry[start + j] as number;
  const outcomes = new Array<PolicyOutcome>(policies.length);
  let allowed = true;
  for (let i = 0, offset = 0; i < policies.length; i++) {
    const policy = policies[i] as Policy;
    const outcome = newOutcome();
    inPlace(policy)(values, offset, fresh, policy, capacities[i] as number, cost, now, outcome);
    allowed &&= outcome.allowed;
    outcomes[i] = outcome;
    offset += fixedSize[policy.algorithm];
  }
  if (!allowed) {
    reportUncharged(outcomes, request, entry, start, now);
  } else if (fresh) {
    takeIn(table, key, layout, values);
  } else {
    for (let j = 0; j < length; j++) entry[start + j] = values[j] as number;
  }
  return { allowed, now, outcomes };
}

/** A new key's entry: one segment, of the states decided on. */
function takeIn(table: MemoryTable, key: string, layout: Layout, values: Float64Array): void {
  const { length } = layout;
  const entry: Entry = new Array<number>(HEAD + length);
  entry[0] = layout.id;
  entry[1] = length;
  for (let j = 0; j < length; j++) entry[HEAD + j] = values[j] as number;
  table.keep(key, NO_SLOT, entry);
}

/**
 * After a refusal nothing was charged, so each policy that allowed reports its quota as it
 * stands (a peek of the states as they were), as `decide` does; its verdict and wait stay.
 */
function reportUncharged(
  outcomes: PolicyOutcome[],
  request: StoreRequest,
  entry: Entry | undefined,
  start: number,
  now: number,
): void {
  const { policies, capacities } = request;
  const { values } = scratch;
  const peek = newOutcome();
  for (let i = 0, offset = 0; i < policies.length; i++) {
    const policy = policies[i] as Policy;
    const size = fixedSize[policy.algorithm];
    const outcome = outcomes[i] as PolicyOutcome;
    if (outcome.allowed) {
      if (entry !== undefined) for (let j = offset; j < offset + size; j++) values[j] = entry[start + j] as number;
      inPlace(policy)(values, offset, entry === undefined, policy, capacities[i] as number, 0, now, peek);
      outcome.remaining = peek.remaining;
      outcome.resetAfterMs = peek.resetAfterMs;
      outcome.delayMs = 0;
    }
    offset += size;
  }
}
