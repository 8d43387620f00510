import type { StoreReply } from '@sluice/core';
import { MAX_KEYS_PER_CALL, type ScriptCall } from './commands.js';
import { type Asked, parseReplies } from './reply.js';
import type { Script } from './scripts.js';

interface Pending extends Asked {
  readonly keys: readonly string[];
  readonly args: readonly string[];
  readonly resolve: (reply: StoreReply) => void;
  readonly reject: (error: unknown) => void;
}

interface Batch {
  readonly script: Script;
  readonly pending: Pending[];
  keyCount: number;
}

export interface Batcher {
  /** Queues one decision; its reply comes from the script call that carries it. */
  decide(script: Script, keys: readonly string[], args: readonly string[], asked: Asked): Promise<StoreReply>;
  /** Sends every open batch now, so a command sent next on the client comes after them. */
  flush(): void;
}

/**
 * Decisions asked for in one turn of the event loop travel together: one script call per script
 * and hash slot, up to 32 keys each, sent when full or by `setImmediate`, which runs once the
 * turn has handled all the I/O that was ready (every request a server read in it, say; a
 * nextTick would close each batch after a single request). Redis runs them in
 * the order they were asked, each all-or-nothing as if alone, so nothing about a decision
 * changes, while the per-call cost of a script (in Redis and in the client) is shared. A full
 * batch leaves at once, so under load several are in flight and Redis and Node work in turn.
 *
 * `groupOf` names the hash slot on a Cluster (one call may not span slots) and is constant on
 * a single Redis. A failed call fails every decision it carried; none is re-sent.
 */
export function createBatcher(call: ScriptCall, groupOf: (key: string) => number, ready: () => Error | undefined) {
  const open = new Map<Script, Map<number, Batch>>();
  let scheduled = false;

  const send = (batch: Batch) => {
    const { script, pending } = batch;
    const unavailable = ready();
    if (unavailable) {
      for (const p of pending) p.reject(unavailable);
      return;
    }
    const keys: string[] = [];
    const args: string[] = [];
    // Decisions in a row with the same arguments (one limiter, one cost, Redis's clock: the
    // usual batch) send them once, after their count: Redis and the client each handle a few
    // strings per call instead of five per decision.
    let run: Pending | undefined;
    let countAt = -1;
    let count = 0;
    for (const p of pending) {
      for (const key of p.keys) keys.push(key);
      if (run !== undefined && sameArgs(run.args, p.args)) {
        count++;
        continue;
      }
      if (run !== undefined) args[countAt] = String(count);
      countAt = args.length;
      args.push('', ...p.args);
      run = p;
      count = 1;
    }
    if (run !== undefined) args[countAt] = String(count);
    let sent: Promise<unknown>;
    try {
      sent = call(script, keys, args);
    } catch (error) {
      for (const p of pending) p.reject(error);
      return;
    }
    sent.then(
      (raw) => settle(raw, pending),
      (error: unknown) => {
        for (const p of pending) p.reject(error);
      },
    );
  };

  const flush = () => {
    for (const bySlot of open.values()) {
      for (const batch of bySlot.values()) send(batch);
      bySlot.clear();
    }
  };

  const flushScheduled = () => {
    scheduled = false;
    flush();
  };

  /** The batch a decision joins: the open one of its script and slot, unless that is full. */
  const batchFor = (script: Script, group: number, keyCount: number): Batch => {
    let bySlot = open.get(script);
    if (bySlot === undefined) {
      bySlot = new Map();
      open.set(script, bySlot);
    }
    const current = bySlot.get(group);
    if (current !== undefined && current.keyCount + keyCount <= MAX_KEYS_PER_CALL) return current;
    if (current !== undefined) send(current);
    const batch: Batch = { script, pending: [], keyCount: 0 };
    bySlot.set(group, batch);
    return batch;
  };

  const decide: Batcher['decide'] = (script, keys, args, { policyCount, now }) =>
    new Promise<StoreReply>((resolve, reject) => {
      const batch = batchFor(script, groupOf(keys[0] as string), keys.length);
      batch.pending.push({ keys, args, policyCount, now, resolve, reject });
      batch.keyCount += keys.length;
      if (!scheduled) {
        scheduled = true;
        setImmediate(flushScheduled);
      }
    });

  return { decide, flush };
}

function sameArgs(a: readonly string[], b: readonly string[]): boolean {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Hands each decision its part of the batch's reply, in the order they were queued. */
function settle(raw: unknown, pending: readonly Pending[]) {
  let replies: StoreReply[];
  try {
    replies = parseReplies(raw, pending);
  } catch (error) {
    for (const p of pending) p.reject(error);
    return;
  }
  for (const [i, p] of pending.entries()) p.resolve(replies[i] as StoreReply);
}
