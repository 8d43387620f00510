import type { Mode } from '../inproc/contender.js';
import {
  COUNTED_FIELDS,
  FIXED_HEADERS,
  LOCAL_FIRST_REDIS,
  MEMORY_BESIDE_IDLE_CLIENT,
  REDIS_COUNTED_FIELDS,
  REDIS_ROUND_TRIP,
} from './apps/app.js';

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

/**
 * V8's flags for every HTTP server. A server here sits idle most of a cycle; V8's memory
 * reducer would shrink its heap then, and its next run would pay for growing it again. V8
 * also starts the young generation small and grows it with the load a process has served, so
 * a server in few runs would scavenge more often than one in many: every server starts at the
 * size a steadily loaded one reaches, V8's largest on 64-bit (see the bench README).
 */
export const SERVER_V8_FLAGS: readonly string[] = ['--no-memory-reducer', '--min-semi-space-size=16'];

/** Whether a variant is sluice's, on whichever store. */
export const isSluice = (variant: string) => variant.startsWith('sluice');
/** Whether a variant's server awaits Redis on every request it decides. */
export const usesRedis = (variant: string) => variant.endsWith(':redis');

/**
 * A framework's contenders besides `bare`, in the order a cycle loads them: the fields control
 * and the counted-fields floor, sluice on memory on both paths, the memory peers; then the INCR
 * control, sluice on Redis on both paths and the deny cache's floor (the memory store's 429
 * path beside an idle Redis client), the Redis peers; then the peers' 429 paths. The two sides
 * of each target sit close. The quick run keeps sluice's cells, the controls and floors and the
 * memory peers' pass path.
 */
export function contendersFor(framework: string, quick: boolean): HttpContender[] {
  const variants = limiters[framework];
  if (variants === undefined) return [];
  const contenders: HttpContender[] = [];
  for (const redis of [false, true]) {
    const controls = redis ? [REDIS_ROUND_TRIP, REDIS_COUNTED_FIELDS] : [FIXED_HEADERS, COUNTED_FIELDS];
    for (const variant of controls) contenders.push({ variant, mode: 'pass' });
    for (const variant of variants.filter((v) => usesRedis(v) === redis)) {
      if (isSluice(variant)) {
        contenders.push(...bothPaths(variant));
        if (variant === 'sluice:redis') contenders.push(deny(MEMORY_BESIDE_IDLE_CLIENT));
      } else if (!redis || !quick) contenders.push({ variant, mode: 'pass' });
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

/** Two contenders loaded at once on the one server core; a target reads the first's figures ÷ the second's. */
export type HttpPair = readonly [HttpContender, HttpContender];

/** A variant's pass path, as a contender. */
export const pass = (variant: string): HttpContender => ({ variant, mode: 'pass' });
/** A variant's 429 path, as a contender. */
export const deny = (variant: string): HttpContender => ({ variant, mode: 'deny' });
const isControl = (variant: string) =>
  [FIXED_HEADERS, COUNTED_FIELDS, REDIS_ROUND_TRIP, REDIS_COUNTED_FIELDS].includes(variant);

/**
 * The pairs a framework's targets read, of the contenders it runs: sluice on memory and the
 * counted floor against the fields control; sluice on memory and the counted floor against
 * each memory peer; sluice on Redis and the Redis counted floor against the INCR control; the
 * memory store's 429 path against its pass path; the Redis store's 429 path (its deny cache)
 * against the memory store's; local-first against memory. A pair's two servers are alike in
 * what they wait on: the targets that compare one that awaits Redis with one that does not read
 * the runs made alone instead (see `pairedRatio`). The quick run leaves out the counted floor
 * against each memory peer, which the peer target shows beside its figure but does not read:
 * 4 of the 33 pairs a cycle of its three frameworks, some 12 s of a quick run.
 */
export function targetPairs(contenders: readonly HttpContender[], quick: boolean): HttpPair[] {
  const memoryPeers = contenders.filter(
    (c) => c.mode === 'pass' && !isSluice(c.variant) && !isControl(c.variant) && !usesRedis(c.variant),
  );
  const pairs: HttpPair[] = [
    [pass('sluice:memory'), pass(FIXED_HEADERS)],
    [pass(COUNTED_FIELDS), pass(FIXED_HEADERS)],
    ...memoryPeers.flatMap((peer): HttpPair[] =>
      quick
        ? [[pass('sluice:memory'), peer]]
        : [
            [pass('sluice:memory'), peer],
            [pass(COUNTED_FIELDS), peer],
          ],
    ),
    [pass('sluice:redis'), pass(REDIS_ROUND_TRIP)],
    [pass(REDIS_COUNTED_FIELDS), pass(REDIS_ROUND_TRIP)],
    [deny('sluice:memory'), pass('sluice:memory')],
    [deny('sluice:redis'), deny('sluice:memory')],
    [deny(MEMORY_BESIDE_IDLE_CLIENT), deny('sluice:memory')],
    [deny('sluice:redis'), deny(MEMORY_BESIDE_IDLE_CLIENT)],
    [pass(LOCAL_FIRST_REDIS), pass('sluice:memory')],
  ];
  const runs = (c: HttpContender) => contenders.some((r) => r.variant === c.variant && r.mode === c.mode);
  return pairs.filter(([a, b]) => runs(a) && runs(b));
}

/** One cycle's pairs: in reverse order on even cycles, as in `cycleSequence`. */
export const pairSequence = (pairs: readonly HttpPair[], cycle: number): HttpPair[] =>
  cycle % 2 === 0 ? [...pairs].reverse() : [...pairs];

/**
 * The contenders a target reads from the runs made alone rather than a pair (see
 * `targetPairs`): the Redis store's two paths, local-first (its Redis CPU beside exact mode's),
 * and where a Redis peer runs, that peer and sluice on memory. The quick run's table cycle runs
 * only these; the full run's tables show every contender.
 */
export function readAlone(contenders: readonly HttpContender[]): HttpContender[] {
  const redisPeer = (c: HttpContender) => usesRedis(c.variant) && !isSluice(c.variant) && !isControl(c.variant);
  const anyRedisPeer = contenders.some(redisPeer);
  const read = (c: HttpContender) =>
    c.variant === 'sluice:redis' ||
    c.variant === LOCAL_FIRST_REDIS ||
    redisPeer(c) ||
    (anyRedisPeer && c.variant === 'sluice:memory');
  return contenders.filter((c) => (c.mode === 'pass' ? read(c) : c.variant === 'sluice:redis'));
}
