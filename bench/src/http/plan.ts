import type { Mode } from '../inproc/contender.js';
import { FIXED_HEADERS, LOCAL_FIRST_REDIS, REDIS_ROUND_TRIP } from './apps/app.js';

/** One server of a framework's group: a variant (`bare`, a control, `<limiter>:<store>`) on one path. */
export interface HttpContender {
  variant: string;
  mode: Mode;
}

/**
 * The limiters each framework is measured with: sluice with both stores, then the limiters its
 * users usually reach for. A contender added here needs its variant in the framework's app
 * (`apps/<framework>.ts`); the report picks it up as a peer unless its name starts with `sluice`.
 */
export const limiters: Record<string, string[]> = {
  express: [
    'sluice:memory',
    'sluice:redis',
    'express-rate-limit:memory',
    'express-rate-limit:redis',
    'rate-limiter-flexible:memory',
    'rate-limiter-flexible:redis',
  ],
  fastify: [
    'sluice:memory',
    'sluice:redis',
    LOCAL_FIRST_REDIS,
    '@fastify/rate-limit:memory',
    '@fastify/rate-limit:redis',
  ],
  koa: ['sluice:memory', 'sluice:redis', 'koa-ratelimit:memory', 'koa-ratelimit:redis'],
};

/** `node` is the ceiling: `http.createServer` alone, measured bare only. */
export const frameworks = ['node', ...Object.keys(limiters)];

const isSluice = (variant: string) => variant.startsWith('sluice');
const usesRedis = (variant: string) => variant.endsWith(':redis');

/**
 * A framework's contenders besides `bare`, in the order a cycle loads them: the fields control,
 * sluice on memory on both paths, the memory peers; then the INCR control, sluice on Redis on
 * both paths, the Redis peers; then the peers' 429 paths. The two sides of each target sit
 * close. The quick run keeps sluice's cells, the controls and the memory peers' pass path.
 */
export function contendersFor(framework: string, quick: boolean): HttpContender[] {
  const variants = limiters[framework];
  if (variants === undefined) return [];
  const contenders: HttpContender[] = [];
  for (const redis of [false, true]) {
    contenders.push({ variant: redis ? REDIS_ROUND_TRIP : FIXED_HEADERS, mode: 'pass' });
    for (const variant of variants.filter((v) => usesRedis(v) === redis)) {
      if (isSluice(variant)) contenders.push(...bothPaths(variant));
      else if (!redis || !quick) contenders.push({ variant, mode: 'pass' });
    }
  }
  if (!quick) {
    for (const variant of variants.filter((v) => !isSluice(v))) contenders.push({ variant, mode: 'deny' });
  }
  return contenders;
}

const bothPaths = (variant: string): HttpContender[] => [
  { variant, mode: 'pass' },
  { variant, mode: 'deny' },
];

/**
 * One cycle's sequence of runs: `bare` before, between and after the contenders, so that every
 * contender's run has a bare run on each side and its ratio comes from neighbouring runs. Even
 * cycles take the contenders in reverse, so that no contender always runs early in a cycle.
 */
export function cycleSequence(contenders: readonly HttpContender[], cycle: number): HttpContender[] {
  const bare: HttpContender = { variant: 'bare', mode: 'pass' };
  const ordered = cycle % 2 === 0 ? [...contenders].reverse() : contenders;
  return [bare, ...ordered.flatMap((c) => [c, bare])];
}
