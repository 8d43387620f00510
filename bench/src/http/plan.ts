import type { Mode } from '../inproc/contender.js';
import { FIXED_HEADERS, LOCAL_FIRST_REDIS, REDIS_ROUND_TRIP } from './apps/app.js';

export interface HttpJob {
  framework: string;
  variant: string;
  mode: Mode;
}

/** For each framework: sluice with both stores, then the limiters its users usually reach for. */
const limiters: Record<string, string[]> = {
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

export const frameworks = ['node', ...Object.keys(limiters)];

/**
 * A framework's jobs: the bare framework and its two controls (the fields alone, one Redis round
 * trip alone), then every limiter on the pass and the 429 path.
 */
export function jobsFor(framework: string, quick: boolean): HttpJob[] {
  const jobs: HttpJob[] = [{ framework, variant: 'bare', mode: 'pass' }];
  if (framework in limiters) {
    jobs.push({ framework, variant: FIXED_HEADERS, mode: 'pass' });
    if (!quick || framework === 'fastify') jobs.push({ framework, variant: REDIS_ROUND_TRIP, mode: 'pass' });
  }
  for (const variant of limiters[framework] ?? []) {
    // The quick run keeps sluice's 429 path (a target) and the peers' pass path, Redis only for Fastify.
    const sluice = variant.startsWith('sluice');
    if (quick && !sluice && variant.endsWith(':redis') && framework !== 'fastify') continue;
    const modes: Mode[] = quick && !sluice ? ['pass'] : ['pass', 'deny'];
    for (const mode of modes) jobs.push({ framework, variant, mode });
  }
  return jobs;
}

/** Rotates a list by `by` places, so that no contender always runs first or last. */
export const rotate = <T>(list: readonly T[], by: number): T[] => {
  const shift = list.length === 0 ? 0 : by % list.length;
  return [...list.slice(shift), ...list.slice(0, shift)];
};
