/**
 * A fleet of app processes on one hot key, for the local-first benches: each child has its
 * own connection and local-first store and sends a paced load on key `hot` for a fixed time.
 * Every child reads one clock aligned to a window start, so the run lies in one window and
 * the fleet admits `limit + excess`. Bounded: a child that outlives 60 s is killed.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { createLimiter } from '@sluice/core';
import { createRedisStore } from '@sluice/redis';
import { Redis } from 'ioredis';

export interface FleetRun {
  url: string;
  processes: number;
  /** Requests per second each process sends. */
  ratePerS: number;
  limit: number;
  windowMs: number;
  durationMs: number;
  syncIntervalMs: number;
}

interface Job extends FleetRun {
  prefix: string;
  windowStart: number;
}

export interface ChildCounts {
  sent: number;
  admitted: number;
  /** Decisions that failed (none expected): refused, so they cannot hide in the excess. */
  failed: number;
  /** How long the child sent for and heard every decision, in ms. */
  elapsedMs: number;
}

/** Every process is connected and warm before the parent names the start. */
async function child(job: Job): Promise<ChildCounts> {
  const client = new Redis(job.url, { maxRetriesPerRequest: 0 });
  const store = createRedisStore({ client, prefix: job.prefix, localFirst: { syncIntervalMs: job.syncIntervalMs } });
  let startAt = Number.POSITIVE_INFINITY;
  // Until the start the clock stands in the window before, so the warm-up counts nothing.
  const clock = () => (Number.isFinite(startAt) ? job.windowStart + (Date.now() - startAt) : job.windowStart - 1);
  const limiter = createLimiter({
    limit: job.limit,
    window: job.windowMs,
    algorithm: 'fixed-window',
    store,
    clock,
    onStoreError: 'deny',
  });
  await limiter.peek('hot');
  const start = new Promise<number>((resolve) => process.once('message', (at) => resolve(at as number)));
  process.send?.('ready');
  startAt = await start;
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, startAt - Date.now())));
  const counts: ChildCounts = { sent: 0, admitted: 0, failed: 0, elapsedMs: 0 };
  // Paced by elapsed time: every turn sends what the rate owes by now, but at most two
  // milliseconds' worth, so a process that falls behind sends less (and says so) instead of
  // deciding a backlog in one turn that no sync could interleave with.
  const most = Math.max(1, Math.ceil(job.ratePerS / 500));
  while (Date.now() - startAt < job.durationMs) {
    const owed = Math.floor(((Date.now() - startAt) * job.ratePerS) / 1000);
    const turn: Promise<void>[] = [];
    for (const last = Math.min(owed, counts.sent + most); counts.sent < last; counts.sent++) {
      turn.push(
        limiter.consume('hot').then((decision) => {
          if (decision.allowed) counts.admitted++;
          if (decision.reason === 'store-unavailable') counts.failed++;
        }),
      );
    }
    await Promise.all(turn);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  counts.elapsedMs = Date.now() - startAt;
  await store.localFirst?.close();
  client.disconnect();
  return counts;
}

/** Runs one fleet; `during` runs while the load is on (a CPU meter) and its result is returned. */
export async function runFleet<T>(
  run: FleetRun,
  during: { start(): void; stop(): T },
): Promise<{ children: ChildCounts[]; measured: T }> {
  const windowStart = Math.floor(Date.now() / run.windowMs) * run.windowMs + 7 * run.windowMs;
  const job: Job = { ...run, prefix: `bench-lf:${randomUUID()}:`, windowStart };
  const workers = Array.from({ length: run.processes }, () =>
    fork(fileURLToPath(import.meta.url), ['child', JSON.stringify(job)]),
  );
  const timer = setTimeout(() => {
    for (const worker of workers) worker.kill('SIGKILL');
  }, 60_000);
  const next = (worker: ChildProcess) =>
    new Promise<unknown>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('exit', () => reject(new Error('a child exited early (or took longer than 60 s)')));
    });
  try {
    await Promise.all(workers.map(next));
    const results = workers.map(next);
    const startAt = Date.now() + 200;
    for (const worker of workers) worker.send(startAt);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, startAt - Date.now())));
    during.start();
    const children = (await Promise.all(results)) as ChildCounts[];
    return { children, measured: during.stop() };
  } finally {
    clearTimeout(timer);
  }
}

/** The worst-case excess of one window: (N − 1) × r × (2T + d), with d the sync round trip. */
export const excessBound = (run: FleetRun, roundTripMs: number): number =>
  ((run.processes - 1) * run.ratePerS * (2 * run.syncIntervalMs + roundTripMs)) / 1000;

if (process.argv[2] === 'child') {
  const counts = await child(JSON.parse(process.argv[3] as string) as Job);
  process.send?.(counts);
  process.disconnect?.();
}
