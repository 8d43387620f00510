import { type Algorithm, type Algorithms, algorithms, type Evaluation, type State } from '../algorithms/index.js';
import type { Policy } from '../types.js';

// One entry: most clients of a log limiter have few requests in a window.
const FIRST_CAPACITY = 2;
// Shared by every empty log; never written: an append into it resizes first.
const noValues: number[] = [];

/**
 * One client's sliding-window log, held out of the entry so that a decision never copies it:
 * (time, cost) pairs oldest first in `values[head, tail)`, with their running total. A plain
 * array of doubles, not a typed array: it costs a client a fraction of the memory. Expired
 * entries leave from the head, a charge appends at the tail, and the buffer is compacted or
 * resized only when it fills or empties to a quarter, so each entry is moved a bounded number
 * of times: a decision costs amortised O(1) however long the log.
 */
export class LogBuffer {
  values: number[] = noValues;
  head = 0;
  tail = 0;
  /** Units in `[head, tail)`. */
  total = 0;
  // What the last scan found: the entries in [head, cursor) are at or before `scannedTo`,
  // so the next scan with a later boundary goes on from `cursor`. Entries stay until a
  // charge is stored, as the reference keeps them: a clock stepping back still counts them.
  private cursor = 0;
  private scannedTo = Number.NEGATIVE_INFINITY;
  private expired = 0;

  /** Units logged after `boundary`: the reference's prune at that boundary, without dropping. */
  liveUnits(boundary: number): number {
    if (boundary < this.scannedTo) {
      this.cursor = this.head;
      this.expired = 0;
    }
    const { values, tail } = this;
    let { cursor, expired } = this;
    while (cursor < tail && (values[cursor] as number) <= boundary) {
      expired += values[cursor + 1] as number;
      cursor += 2;
    }
    this.cursor = cursor;
    this.expired = expired;
    this.scannedTo = boundary;
    return this.total - expired;
  }

  /**
   * When the newest live entry leaves the window, as of the last `liveUnits`; 0 when none is
   * live. Whole: `Math.trunc` keeps it a small integer (see `Algorithm`), here and below.
   */
  resetAfter(windowMs: number, now: number): number {
    return this.cursor < this.tail ? Math.trunc((this.values[this.tail - 2] as number) + windowMs - now) : 0;
  }

  /**
   * Where a charge now is logged, as of the last `liveUnits`: at `now`, or at the newest live
   * entry's time when the clock stands behind it (the reference's order, kept).
   */
  appendAt(now: number): number {
    return this.cursor < this.tail ? Math.max(now, this.values[this.tail - 2] as number) : now;
  }

  /**
   * Entry i leaves the window at t_i + W: the wait is until the oldest live entry whose leaving
   * leaves at most `capacity − cost` units. Read from whichever end holds fewer units to step
   * over: from the oldest, those that must leave; from the newest, those that may stay. (A
   * policy that reads another version's long log asks for nearly all of it to leave.)
   */
  retryAfter(used: number, capacity: number, cost: number, windowMs: number, now: number): number {
    const { values, tail, cursor } = this;
    const mayStay = capacity - cost;
    if (mayStay < 0) return windowMs;
    if (used - mayStay <= mayStay) {
      let left = used;
      for (let i = cursor; i < tail; i += 2) {
        left -= values[i + 1] as number;
        if (left <= mayStay) return Math.trunc((values[i] as number) + windowMs - now);
      }
      return windowMs;
    }
    let newer = 0;
    let i = tail - 2;
    while (i > cursor && newer + (values[i + 1] as number) <= mayStay) {
      newer += values[i + 1] as number;
      i -= 2;
    }
    return Math.trunc((values[i] as number) + windowMs - now);
  }

  /** Drops what is at or before `boundary` from the head, as the reference's prune does. */
  trim(boundary: number): void {
    this.total = this.liveUnits(boundary);
    this.head = this.cursor;
    this.expired = 0;
    if (this.head === this.tail) {
      this.head = this.tail = this.cursor = 0;
      if (this.values.length > 4 * FIRST_CAPACITY) this.values = noValues;
    } else if (this.tail - this.head < this.values.length / 4) this.resize(2 * (this.tail - this.head));
  }

  /** Logs `cost` at `now`: onto the newest entry when it is from the same ms. */
  append(now: number, cost: number): void {
    const { tail } = this;
    if (tail > this.head && this.values[tail - 2] === now) {
      this.values[tail - 1] = (this.values[tail - 1] as number) + cost;
    } else {
      if (tail === this.values.length) this.resize(Math.max(FIRST_CAPACITY, 2 * (tail - this.head)));
      this.values[this.tail] = now;
      this.values[this.tail + 1] = cost;
      this.tail += 2;
    }
    this.total += cost;
  }

  /**
   * Takes `cost` back from the newest entries logged by `chargedBy`, never beyond an empty log: a
   * later entry is a later request's. Called after `trim`, so every entry is live.
   */
  giveBack(cost: number, chargedBy: number): void {
    const { values } = this;
    let end = this.tail;
    while (end > this.head && (values[end - 2] as number) > chargedBy) end -= 2;
    let left = cost;
    while (left > 0 && end > this.head) {
      end -= 2;
      const units = values[end + 1] as number;
      const taken = Math.min(units, left);
      values[end + 1] = units - taken;
      left -= taken;
      this.total -= taken;
      if (taken === units) {
        values.copyWithin(end, end + 2, this.tail);
        this.tail -= 2;
      }
    }
  }

  /** Moves the live entries to the front of a buffer of `size` values (the same one when it fits). */
  private resize(size: number): void {
    const live = this.tail - this.head;
    const shift = this.head;
    if (size <= this.values.length && size >= this.values.length / 2) {
      this.values.copyWithin(0, this.head, this.tail);
    } else {
      const values = new Array<number>(Math.max(FIRST_CAPACITY, size)).fill(0);
      for (let i = 0; i < live; i++) values[i] = this.values[shift + i] as number;
      this.values = values;
    }
    this.head = 0;
    this.tail = live;
    this.cursor -= shift;
  }
}

/** An allowed charge, applied to the log only if the decision is stored. */
export class LogCharge {
  constructor(
    private readonly log: LogBuffer | undefined,
    private readonly boundary: number,
    private readonly at: number,
    private readonly cost: number,
  ) {}

  /** The log after the charge: the reference's `prune` then append, in place. */
  apply(): LogBuffer {
    const log = this.log ?? new LogBuffer();
    log.trim(this.boundary);
    log.append(this.at, this.cost);
    return log;
  }
}

/** What the memory store keeps for a sliding-window-log policy: its log, or a charge to apply to it. */
export type LogState = LogBuffer | LogCharge;

/**
 * Core's `slidingWindowLog`, decision for decision, on a `LogBuffer`: the same prune, sum,
 * append and waits, at a cost that does not grow with the log. Only a refused request reads
 * further than the expired head, as far as the entries that must leave before it fits.
 */
export const memorySlidingLog: Algorithm<LogState> = {
  evaluate(state, policy, capacity, cost, now): Evaluation<LogState> {
    // A charge is only ever written, never evaluated.
    const log = state as LogBuffer | undefined;
    const { windowMs } = policy;
    const boundary = now - windowMs;
    const used = log === undefined ? 0 : log.liveUnits(boundary);
    if (used + cost <= capacity) {
      const at = log === undefined ? now : log.appendAt(now);
      return {
        allowed: true,
        remaining: capacity - used - cost,
        // A charge makes `at` the newest entry; a peek (cost 0) logs nothing.
        resetAfterMs: cost > 0 ? Math.trunc(at + windowMs - now) : (log?.resetAfter(windowMs, now) ?? 0),
        retryAfterMs: 0,
        delayMs: 0,
        next: cost > 0 ? new LogCharge(log, boundary, at, cost) : (log ?? new LogBuffer()),
      };
    }
    return {
      allowed: false,
      remaining: Math.max(0, capacity - used),
      resetAfterMs: log?.resetAfter(windowMs, now) ?? 0,
      retryAfterMs: log === undefined ? windowMs : log.retryAfter(used, capacity, cost, windowMs, now),
      delayMs: 0,
      next: log ?? new LogBuffer(),
    };
  },

  seed(used, _policy: Policy, now) {
    const log = new LogBuffer();
    if (used > 0) log.append(now, used);
    return log;
  },

  refund(state, policy, _capacity, cost, now, _chargedAt, chargedBy) {
    const log = (state as LogBuffer | undefined) ?? new LogBuffer();
    log.trim(now - policy.windowMs);
    log.giveBack(cost, chargedBy);
    return log;
  },
};

/** A policy's state as the memory store holds it: the log's is its `LogState`. */
export type MemoryState = State | LogState;

/** The algorithms the memory store runs: core's reference ones, and the log held out of line. */
export const memoryAlgorithms: Algorithms<MemoryState> = { ...algorithms, 'sliding-window-log': memorySlidingLog };
