import type { StoreReply, StoreRequest } from '@sluice/core';
import type { ScriptCall } from './commands.js';
import { runHeader } from './decision-args.js';
import { MAX_KEYS_PER_CALL } from './lua/prelude.js';
import { type Asked, parseReplies } from './reply.js';
import type { Script } from './scripts.js';
import { lookDue, type Stall, type StallGuard, stalledError, waitedTooLong } from './stall-guard.js';

/** A decision as the batcher takes it: what the reader needs, and how long its caller waits. */
export interface QueuedDecision extends Asked {
  /** The limiter's `storeTimeoutMs`; `Infinity` for a caller the store knows no limiter of. */
  readonly timeoutMs: number;
}

interface Pending extends QueuedDecision {
  readonly keys: readonly string[];
  readonly args: readonly string[];
  readonly resolve: (reply: StoreReply) => void;
  readonly reject: (error: unknown) => void;
}

interface Batch {
  readonly lane: Lane;
  readonly pending: Pending[];
  keyCount: number;
}

/** The calls of one script and hash slot: the batch still open, and how many are in flight. */
interface Lane {
  readonly script: Script;
  readonly group: number;
  open: Batch | undefined;
  inFlight: number;
}

/** Told of a reply to a request sent at `sentAt` (the request's own clock when it has one): the deny cache's `learn`. */
export type Learn = (request: StoreRequest, sentAt: number, reply: StoreReply) => void;

/** The longest a batch that is not full waits for a call ahead of it before it leaves anyway. */
export const MAX_WAIT_MS = 2;

export interface Batcher {
  /** Queues one decision; its reply comes from the script call that carries it. */
  decide(script: Script, keys: readonly string[], args: readonly string[], asked: QueuedDecision): Promise<StoreReply>;
  /** Sends every open batch now, so a command sent next on the client comes after them. */
  flush(): void;
}

export interface BatcherParts {
  /** Sends one script call. */
  readonly call: ScriptCall;
  /** A key's hash slot on a Cluster (one call may not span slots); constant on a single Redis. */
  readonly groupOf: (key: string) => number;
  /** The connection a group's calls travel on: one on a single Redis, a slot's master on a Cluster. */
  readonly connectionOf: (group: number) => string;
  /** Why the client cannot take a call now, if it cannot. */
  readonly notReady: () => Error | undefined;
  readonly stalls: StallGuard;
  /** The deny cache's `learn`, if the store keeps one. */
  readonly learn?: Learn | undefined;
}

/**
 * Decisions asked for together travel together: one script call per script and hash slot (a
 * lane), up to 32 keys each. Redis runs them in the order they were asked, each all-or-nothing
 * as if alone, so nothing about a decision changes, while the per-call cost of a script (in
 * Redis and in the client) is shared.
 *
 * A full batch leaves at once. One that is not full leaves by `setImmediate`, which runs once
 * the turn has handled all the I/O that was ready (every request a server read in it, say; a
 * nextTick would close each batch after a single request), if its lane has no call in flight.
 * Otherwise it waits for that call's reply, gathering the decisions asked for meanwhile, but
 * never longer than `MAX_WAIT_MS`: Redis answers one connection's calls in order, so on a
 * nearby Redis the wait costs little, and under load each call carries more decisions. The
 * limit bounds what the wait costs on a distant Redis, and keeps a call that never settles
 * from holding back the ones after it.
 *
 * A failed call fails every decision it carried; none is re-sent. A decision whose caller would
 * have given up before the calls ahead of it on a stalled connection are answered is not sent
 * but failed (`createStallGuard`).
 */
export function createBatcher({ call, groupOf, connectionOf, notReady, stalls, learn }: BatcherParts) {
  const lanes = new Map<Script, Map<number, Lane>>();
  // The lanes with an open batch: all a flush has to look at.
  const withOpen = new Set<Lane>();
  let scheduled = false;
  let waitLimit: NodeJS.Timeout | undefined;

  const send = (batch: Batch) => {
    const { lane } = batch;
    if (lane.open === batch) {
      lane.open = undefined;
      withOpen.delete(lane);
      // The limit is for batches waiting now, not for the next one to be held.
      if (withOpen.size === 0) stopWaitLimit();
    }
    const unavailable = notReady();
    if (unavailable) {
      for (const p of batch.pending) p.reject(unavailable);
      retireIfIdle(lane);
      return;
    }
    const connection = connectionOf(lane.group);
    const pending = unheld(batch.pending, stalls.stall(connection));
    if (pending.length === 0) {
      retireIfIdle(lane);
      return;
    }
    const keys: string[] = [];
    const args: string[] = [];
    // Decisions in a row with the same arguments (one limiter, one cost, Redis's clock: the
    // usual batch) send them once, their count in the run's header: Redis and the client each
    // handle a few strings per call instead of a dozen per decision.
    let run: Pending | undefined;
    let countAt = -1;
    let count = 0;
    for (const p of pending) {
      for (const key of p.keys) keys.push(key);
      if (run !== undefined && sameArgs(run.args, p.args)) {
        count++;
        continue;
      }
      if (run !== undefined) args[countAt] = runHeader(count, run.args);
      countAt = args.length;
      for (const arg of p.args) args.push(arg);
      run = p;
      count = 1;
    }
    if (run !== undefined) args[countAt] = runHeader(count, run.args);
    // What a learner is told the decisions were sent at: no earlier than each was asked, and
    // no later than Redis decided it. One clock read for the whole call.
    const sentAt = learn === undefined ? 0 : Date.now();
    let sent: Promise<unknown>;
    try {
      sent = call(lane.script, keys, args);
    } catch (error) {
      for (const p of pending) p.reject(error);
      retireIfIdle(lane);
      return;
    }
    lane.inFlight++;
    stalls.watch(connection, sent);
    sent.then(
      (raw) => {
        landed(lane);
        settle(raw, pending, sentAt, learn);
      },
      (error: unknown) => {
        landed(lane);
        for (const p of pending) p.reject(error);
      },
    );
  };

  /** A call came back: a batch waiting for it leaves, unless this turn's flush will send it. */
  const landed = (lane: Lane) => {
    lane.inFlight--;
    if (lane.inFlight === 0 && lane.open !== undefined && !scheduled) send(lane.open);
    retireIfIdle(lane);
  };

  /** Lanes live while they have work, so there are never more than the slots in use. */
  const retireIfIdle = (lane: Lane) => {
    if (lane.open === undefined && lane.inFlight === 0) lanes.get(lane.script)?.delete(lane.group);
  };

  const flushScheduled = () => {
    scheduled = false;
    for (const lane of withOpen) if (lane.inFlight === 0) send(lane.open as Batch);
    if (withOpen.size > 0 && waitLimit === undefined) {
      waitLimit = setTimeout(() => {
        waitLimit = undefined;
        flushAll();
      }, MAX_WAIT_MS);
      waitLimit.unref();
    }
  };

  const flushAll = () => {
    for (const lane of withOpen) send(lane.open as Batch);
  };

  const stopWaitLimit = () => {
    clearTimeout(waitLimit);
    waitLimit = undefined;
  };

  /** The batch a decision joins: the open one of its script and slot, unless that is full. */
  const batchFor = (script: Script, group: number, keyCount: number): Batch => {
    let bySlot = lanes.get(script);
    if (bySlot === undefined) {
      bySlot = new Map();
      lanes.set(script, bySlot);
    }
    let lane = bySlot.get(group);
    if (lane === undefined) {
      lane = { script, group, open: undefined, inFlight: 0 };
      bySlot.set(group, lane);
    }
    const current = lane.open;
    if (current !== undefined && current.keyCount + keyCount <= MAX_KEYS_PER_CALL) return current;
    if (current !== undefined) send(current);
    const batch: Batch = { lane, pending: [], keyCount: 0 };
    lane.open = batch;
    withOpen.add(lane);
    return batch;
  };

  const decide: Batcher['decide'] = (script, keys, args, { policyCount, now, learnFrom, timeoutMs }) =>
    new Promise<StoreReply>((resolve, reject) => {
      const batch = batchFor(script, groupOf(keys[0] as string), keys.length);
      batch.pending.push({ keys, args, policyCount, now, learnFrom, timeoutMs, resolve, reject });
      batch.keyCount += keys.length;
      if (!scheduled) {
        scheduled = true;
        setImmediate(flushScheduled);
      }
    });

  return { decide, flush: flushAll };
}

/**
 * The decisions to send. On a stalled connection that is those whose callers wait longer than
 * the calls ahead of them have, and one more when a look is due (one decision, not a batch:
 * each sent is charged when Redis resumes); the others fail here.
 */
function unheld(pending: Pending[], stall: Stall | undefined): Pending[] {
  if (stall === undefined || !pending.some((p) => waitedTooLong(stall, p.timeoutMs))) return pending;
  const going: Pending[] = [];
  let looking = false;
  for (const p of pending) {
    if (!waitedTooLong(stall, p.timeoutMs)) going.push(p);
    else if (!looking && lookDue(stall, p.timeoutMs)) {
      looking = true;
      going.push(p);
    } else p.reject(stalledError(stall));
  }
  return going;
}

function sameArgs(a: readonly string[], b: readonly string[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * Hands each decision its part of the batch's reply, in the order they were queued; a learner
 * hears of each reply it asked for first, in the same turn, with no promise between.
 */
function settle(raw: unknown, pending: readonly Pending[], sentAt: number, learn: Learn | undefined) {
  let replies: StoreReply[];
  try {
    replies = parseReplies(raw, pending);
  } catch (error) {
    for (const p of pending) p.reject(error);
    return;
  }
  for (let i = 0; i < pending.length; i++) {
    const p = pending[i] as Pending;
    const reply = replies[i] as StoreReply;
    if (learn !== undefined && p.learnFrom !== undefined) learn(p.learnFrom, p.now ?? sentAt, reply);
    p.resolve(reply);
  }
}
