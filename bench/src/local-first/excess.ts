/**
 * Over-admission of the Redis store's local-first mode, measured against its bound.
 *
 *   pnpm --filter @sluice/bench exec tsx src/local-first/excess.ts [redis-url]
 *
 * For each sync interval T: 4 child processes, each with its own connection and store, send
 * 1,000 requests/s on one key for 2 s against `limit: 1000, window: '1m'` (fixed window).
 * Every process reads one clock aligned to a window start, so the 2 s lie in one window, and
 * the fleet admits `limit + excess`. Printed next to the bound (N − 1) × r × (2T + d) and the
 * even-spread estimate (N − 1) × r × T. Bounded: about 3 s per run, loopback Redis only.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { createLimiter } from '@sluice/core';
import { createRedisStore } from '@sluice/redis';
import { Redis } from 'ioredis';

const PROCESSES = 4;
const RATE_PER_S = 1000;
const LIMIT = 1000;
const WINDOW_MS = 60_000;
const DURATION_MS = 2000;
const INTERVALS_MS = (process.env.INTERVALS ?? '10,50').split(',').map(Number);
const ROUNDS = Number(process.env.ROUNDS ?? 3);

interface Job {
  url: string;
  prefix: string;
  syncIntervalMs: number;
  windowStart: number;
}

/** Every process is connected and warm before the parent names the start. */
async function child(job: Job): Promise<number> {
  const client = new Redis(job.url, { maxRetriesPerRequest: 0 });
  const store = createRedisStore({ client, prefix: job.prefix, localFirst: { syncIntervalMs: job.syncIntervalMs } });
  let startAt = Number.POSITIVE_INFINITY;
  // Until the start the clock stands in the window before, so the warm-up counts nothing.
  const clock = () => (Number.isFinite(startAt) ? job.windowStart + (Date.now() - startAt) : job.windowStart - 1);
  // A failed decision is refused, never admitted, so it cannot hide in the excess.
  const limiter = createLimiter({
    limit: LIMIT,
    window: WINDOW_MS,
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
  let sent = 0;
  let admitted = 0;
  let failed = 0;
  const inFlight: Promise<void>[] = [];
  // Paced by elapsed time: every turn sends what the rate owes by now.
  while (Date.now() - startAt < DURATION_MS) {
    const owed = Math.floor(((Date.now() - startAt) * RATE_PER_S) / 1000);
    for (; sent < owed; sent++) {
      inFlight.push(
        limiter.consume('hot').then((decision) => {
          if (decision.allowed) admitted++;
          if (decision.reason === 'store-unavailable') failed++;
        }),
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  await Promise.all(inFlight);
  await store.localFirst?.close();
  client.disconnect();
  if (process.env.SHOW_PROCESSES) console.log({ sent, admitted, failed, lagMs: Date.now() - startAt - DURATION_MS });
  return admitted;
}

async function run(url: string, syncIntervalMs: number): Promise<number> {
  const windowStart = Math.floor(Date.now() / WINDOW_MS) * WINDOW_MS + 7 * WINDOW_MS;
  const job: Job = { url, prefix: `bench-lf:${randomUUID()}:`, syncIntervalMs, windowStart };
  const workers = Array.from({ length: PROCESSES }, () =>
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
  await Promise.all(workers.map(next));
  const results = workers.map(next);
  const startAt = Date.now() + 200;
  for (const worker of workers) worker.send(startAt);
  const counts = (await Promise.all(results)) as number[];
  clearTimeout(timer);
  if (process.env.SHOW_PROCESSES) console.log(counts); // admitted per process
  return counts.reduce((sum, n) => sum + n, 0);
}

if (process.argv[2] === 'child') {
  const admitted = await child(JSON.parse(process.argv[3] as string) as Job);
  process.send?.(admitted);
  process.disconnect?.();
} else {
  const url = process.argv[2] ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const rttMs = 1;
  console.log(
    `${PROCESSES} processes × ${RATE_PER_S} req/s on one key, limit ${LIMIT}/min, ${DURATION_MS} ms, fixed window`,
  );
  console.log('| sync T | admitted (runs) | excess (max) | excess % | bound (N−1)·r·(2T+d) | (N−1)·r·T |');
  console.log('| --- | --- | --- | --- | --- | --- |');
  for (const interval of INTERVALS_MS) {
    const admitted: number[] = [];
    for (let round = 0; round < ROUNDS; round++) admitted.push(await run(url, interval));
    const excess = Math.max(...admitted) - LIMIT;
    const bound = ((PROCESSES - 1) * RATE_PER_S * (2 * interval + rttMs)) / 1000;
    const spread = ((PROCESSES - 1) * RATE_PER_S * interval) / 1000;
    console.log(
      `| ${interval} ms | ${admitted.join(', ')} | +${excess} | +${((100 * excess) / LIMIT).toFixed(1)} % | +${bound} | +${spread} |`,
    );
  }
}
