/**
 * One hot key served by local-first stores: decisions per second across the fleet, the CPU
 * its Redis spends on them, and the over-admission against its bound.
 *
 *   cd bench && pnpm exec tsx --conditions=@sluice/source src/local-first/hot-key.ts
 *
 * 4 child processes × 50,000 requests/s on one key for 2 s (200,000 decisions/s), limit
 * 200,000 per minute (fixed window), so the limit is reached halfway and the second half is
 * refusals. Redis is a private redis-server on loopback, pinned to CPU 1; its share of a core
 * is read from /proc/<pid>/stat over the loaded seconds. Env: RATE (per process), SYNC (ms),
 * ROUNDS. Bounded: about 3 s per round.
 */
import { startCpuMeter } from '../lib/cpu.js';
import { startRedis } from '../lib/redis-server.js';
import { excessBound, type FleetRun, runFleet } from './fleet.js';

const PROCESSES = 4;
const RATE_PER_S = Number(process.env.RATE ?? 50_000);
const DURATION_MS = 2000;
const SYNC_MS = Number(process.env.SYNC ?? 10);
const ROUNDS = Number(process.env.ROUNDS ?? 3);

const redis = await startRedis(1);
try {
  const run: FleetRun = {
    url: `redis://127.0.0.1:${redis.port}`,
    processes: PROCESSES,
    ratePerS: RATE_PER_S,
    limit: (PROCESSES * RATE_PER_S * DURATION_MS) / 1000 / 2,
    windowMs: 60_000,
    durationMs: DURATION_MS,
    syncIntervalMs: SYNC_MS,
  };
  console.log(
    `${PROCESSES} processes × ${RATE_PER_S} req/s on one key, ${DURATION_MS} ms, limit ${run.limit}/min, sync ${SYNC_MS} ms`,
  );
  console.log(
    '| round | decisions/s | Redis CPU (share of a core) | admitted | excess | bound (N−1)·r·(2T+d), r as reached |',
  );
  console.log('| --- | --- | --- | --- | --- | --- |');
  for (let round = 1; round <= ROUNDS; round++) {
    let meter: (() => ReturnType<ReturnType<typeof startCpuMeter>>) | undefined;
    const { children, measured } = await runFleet(run, {
      start: () => {
        meter = startCpuMeter({ redis: redis.pid });
      },
      stop: () => meter?.(),
    });
    const sent = children.reduce((sum, c) => sum + c.sent, 0);
    const admitted = children.reduce((sum, c) => sum + c.admitted, 0);
    const failed = children.reduce((sum, c) => sum + c.failed, 0);
    const seconds = Math.max(...children.map((c) => c.elapsedMs)) / 1000;
    const redisCores = measured?.cores.redis ?? Number.NaN;
    const excess = admitted - run.limit;
    // The bound at the rate each process reached, which is below the planned one when it fell behind.
    const reached = excessBound({ ...run, ratePerS: sent / PROCESSES / seconds }, 1);
    const percent = (n: number) => `${((100 * n) / run.limit).toFixed(2)} %`;
    console.log(
      `| ${round} | ${Math.round(sent / seconds)} | ${(100 * redisCores).toFixed(1)} % | ${admitted} | ${excess >= 0 ? '+' : ''}${excess} (${percent(excess)}) | +${Math.round(reached)} (${percent(reached)}) |${failed > 0 ? ` ${failed} failed` : ''}`,
    );
  }
} finally {
  await redis.stop();
}
