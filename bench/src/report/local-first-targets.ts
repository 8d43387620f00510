import { LOCAL_FIRST_REDIS, MEMORY_BESIDE_IDLE_CLIENT } from '../http/apps/app.js';
import { deny, pass } from '../http/plan.js';
import type { HttpResult } from '../results.js';
import { findHttp, type HttpRow, pairedRatio } from './http-summary.js';
import { atLeast, atMost, spreadShown } from './target-check.js';
import type { TargetCheck } from './targets.js';

const ratio = (a: number | undefined, b: number | undefined) =>
  a === undefined || b === undefined || !Number.isFinite(a) || !Number.isFinite(b) ? undefined : a / b;

/** Redis CPU per 1,000 decisions of a row, in core-ms (one decision per request). */
const redisMsPer1000 = (row: HttpRow | undefined) =>
  row?.redisCores === undefined || !(row.rps > 0) ? undefined : (1e6 * row.redisCores) / row.rps;

/**
 * The Redis store's targets against the memory store and against itself: local-first Fastify
 * near the memory store, local-first Redis CPU a tenth of exact mode's, and the deny cache's
 * 429 path at least as fast as the memory store's, read against its floor: the memory store's
 * 429 path in a server that also holds an idle Redis client (`MEMORY_BESIDE_IDLE_CLIENT`). The
 * speeds read the pairs that loaded both sides at once on one core; the Redis CPU, the runs
 * made alone.
 */
export function redisStoreTargets(results: readonly HttpResult[], http: readonly HttpRow[]): TargetCheck[] {
  const memory = findHttp(http, 'fastify', 'sluice:memory');
  const exact = findHttp(http, 'fastify', 'sluice:redis');
  const localFirst = findHttp(http, 'fastify', LOCAL_FIRST_REDIS);
  const speedSpread = pairedRatio(results, 'fastify', pass(LOCAL_FIRST_REDIS), pass('sluice:memory'));
  const speed = speedSpread?.median;
  const [exactCpu, localCpu] = [redisMsPer1000(exact), redisMsPer1000(localFirst)];
  const cpu = ratio(localCpu, exactCpu);
  const checks: TargetCheck[] = [
    {
      target: 'HTTP fastify + sluice local-first Redis ÷ fastify + sluice memory',
      value: speed,
      spread: speedSpread,
      unit: 'ratio',
      goal: '≥ 0.90',
      context:
        exact === undefined || memory === undefined
          ? ''
          : `exact Redis ${(exact.ratio / memory.ratio).toFixed(2)} (ratios to bare, runs alone)`,
      met: atLeast(speed, 0.9),
    },
    {
      target: 'Redis CPU per 1,000 decisions: local-first ÷ exact (fastify, 200 path)',
      value: cpu,
      unit: 'ratio',
      goal: '≤ 0.10',
      context:
        exactCpu === undefined || localCpu === undefined
          ? ''
          : `core-ms per 1,000: exact ${exactCpu.toFixed(2)}, local-first ${localCpu.toFixed(3)}`,
      met: atMost(cpu, 0.1),
    },
  ];
  for (const framework of ['express', 'fastify', 'koa']) {
    const paired = pairedRatio(results, framework, deny('sluice:redis'), deny('sluice:memory'));
    const floor = pairedRatio(results, framework, deny(MEMORY_BESIDE_IDLE_CLIENT), deny('sluice:memory'));
    const atFloor = pairedRatio(results, framework, deny('sluice:redis'), deny(MEMORY_BESIDE_IDLE_CLIENT));
    const v = paired?.median;
    checks.push({
      target: `HTTP ${framework} + sluice Redis 429 path (deny cache) ÷ sluice memory 429 path`,
      value: v,
      spread: paired,
      unit: 'ratio',
      goal: '≥ 1.00',
      bound: `the memory store's 429 path beside an idle Redis client ÷ without one ${spreadShown(floor)}`,
      context: `deny cache ÷ that floor ${spreadShown(atFloor)}; each pair loaded at once on one core, both ways round each cycle`,
      met: atLeast(v, 1),
      // Out of reach only while the deny cache keeps up with its floor: below it, sluice misses.
      boundMisses: atLeast(floor?.median, 1) === false && atLeast(atFloor?.median, 1) === true,
    });
  }
  return checks;
}
