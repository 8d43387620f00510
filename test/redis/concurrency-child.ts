import { type AlgorithmName, createLimiter, type Limiter } from '@sluice/core';
import { createRedisStore } from '@sluice/redis';
import { Redis } from 'ioredis';

/** What the parent test asks of each child process. */
export interface ConcurrencyJob {
  url: string;
  prefix: string;
  consumers: number;
  limit: number;
  algorithms: AlgorithmName[];
  now: number;
}

export type ChildMessage =
  | { ready: true }
  | { allowed: Record<string, number>; decided: Record<string, number> }
  | { error: string };

/**
 * One app server: its own connection with auto-pipelining, one limiter per algorithm plus a
 * mixed multi-policy one, and `consumers` concurrent requests on one hot key for each, fired
 * when the parent says go so that every process competes at once.
 */
async function serve(job: ConcurrencyJob) {
  const client = new Redis(job.url, { enableAutoPipelining: true, maxRetriesPerRequest: 0 });
  client.on('error', () => {});
  await new Promise((resolve) => client.once('ready', resolve));
  const store = createRedisStore({ client, prefix: job.prefix });
  const common = { store, clock: () => job.now, onStoreError: 'throw', storeTimeoutMs: 15_000 } as const;
  const limiters: Record<string, Limiter> = {};
  for (const algorithm of job.algorithms) {
    limiters[algorithm] = createLimiter({ ...common, limit: job.limit, window: '1h', algorithm, prefix: algorithm });
  }
  limiters.mixed = createLimiter({
    ...common,
    prefix: 'mixed',
    policies: [
      { name: 'tight', limit: Math.floor(job.limit / 3), window: '1h', algorithm: 'gcra' },
      { name: 'wide', limit: job.limit, window: '1h', algorithm: 'fixed-window' },
      { name: 'log', limit: job.limit, window: '1h', algorithm: 'sliding-window-log' },
    ],
  });
  send({ ready: true });
  await new Promise((resolve) => process.once('message', resolve));
  const allowed: Record<string, number> = {};
  const decided: Record<string, number> = {};
  await Promise.all(
    Object.entries(limiters).map(async ([name, limiter]) => {
      const decisions = await Promise.all(Array.from({ length: job.consumers }, () => limiter.consume('hot')));
      allowed[name] = decisions.filter((d) => d.allowed).length;
      decided[name] = decisions.filter((d) => d.reason === undefined).length;
    }),
  );
  client.disconnect();
  return { allowed, decided };
}

const send = (message: ChildMessage) => process.send?.(message);

process.once('message', (job: ConcurrencyJob) => {
  serve(job).then(
    (result) => send(result),
    (error: unknown) => send({ error: String(error) }),
  );
});
