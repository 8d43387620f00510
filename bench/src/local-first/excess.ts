/**
 * Over-admission of the Redis store's local-first mode, measured against its bound.
 *
 *   cd bench && pnpm exec tsx --conditions=@sluice/source src/local-first/excess.ts [redis-url]
 *
 * For each sync interval T: 4 child processes, each with its own connection and store, send
 * 1,000 requests/s on one key for 2 s against `limit: 1000, window: '1m'` (fixed window),
 * all in one window (see fleet.ts). The fleet's admissions are printed next to the bound
 * (N − 1) × r × (2T + d) and the even-spread estimate (N − 1) × r × T. Bounded: about 3 s
 * per run, loopback Redis only. Env: INTERVALS (ms, comma-separated), ROUNDS.
 */
import { excessBound, type FleetRun, runFleet } from './fleet.js';

const INTERVALS_MS = (process.env.INTERVALS ?? '10,50').split(',').map(Number);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const url = process.argv[2] ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const base = { url, processes: 4, ratePerS: 1000, limit: 1000, windowMs: 60_000, durationMs: 2000 };
const nothing = { start() {}, stop() {} };

console.log(
  `${base.processes} processes × ${base.ratePerS} req/s on one key, limit ${base.limit}/min, ${base.durationMs} ms, fixed window`,
);
console.log('| sync T | admitted (runs) | excess (max) | excess % | bound (N−1)·r·(2T+d) | (N−1)·r·T |');
console.log('| --- | --- | --- | --- | --- | --- |');
for (const syncIntervalMs of INTERVALS_MS) {
  const run: FleetRun = { ...base, syncIntervalMs };
  const admitted: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const { children } = await runFleet(run, nothing);
    admitted.push(children.reduce((sum, child) => sum + child.admitted, 0));
  }
  const excess = Math.max(...admitted) - run.limit;
  const spread = ((run.processes - 1) * run.ratePerS * syncIntervalMs) / 1000;
  console.log(
    `| ${syncIntervalMs} ms | ${admitted.join(', ')} | +${excess} | +${((100 * excess) / run.limit).toFixed(1)} % | +${excessBound(run, 1)} | +${spread} |`,
  );
}
