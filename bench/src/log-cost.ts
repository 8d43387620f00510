/**
 * Redis time per sliding-window-log decision at 100, 10k and 100k entries in the log, from
 * Redis's own `INFO commandstats` (script time inside Redis, not the round trip).
 *   source scripts/redis-up.sh && pnpm --dir bench exec tsx src/log-cost.ts
 */
import { createLimiter, toPolicy } from '@sluice/core';
import { createRedisStore } from '@sluice/redis';
import { Redis } from 'ioredis';

const client = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: 0 });
const NOW = 1_700_000_000_000;
const WINDOW = 3_600_000;
const DECISIONS = 200;

async function costAt(entries: number): Promise<number> {
  const prefix = `log-cost:${entries}:`;
  const options = { name: 'log', limit: entries + DECISIONS, window: WINDOW, algorithm: 'sliding-window-log' } as const;
  const policy = toPolicy(options, 'options');
  const clientKey = `${prefix}{cost|k}`;
  // The log as the store keeps it: one entry a millisecond, all inside the window.
  await client.del(clientKey, `${clientKey}:${policy.slot}`);
  const start = NOW - entries;
  for (let from = 0; from < entries; from += 10_000) {
    const values: number[] = [];
    for (let i = from; i < Math.min(entries, from + 10_000); i++) values.push(start + i, 1);
    await client.rpush(`${clientKey}:${policy.slot}`, ...values);
  }
  await client.set(clientKey, ` ${policy.slot}@${policy.version}=${entries},0;${entries},${NOW + WINDOW}`);
  let clock = NOW;
  const limiter = createLimiter({
    policies: [options],
    store: createRedisStore({ client, prefix }),
    prefix: 'cost',
    clock: () => clock,
    storeTimeoutMs: 60_000,
  });
  await client.config('RESETSTAT');
  for (let i = 0; i < DECISIONS; i++) {
    clock++;
    const decision = await limiter.consume('k');
    if (!decision.allowed || decision.reason !== undefined) throw new Error(`decision ${i} was not made`);
  }
  const stats = (await client.info('commandstats')).split('\n').find((line) => line.startsWith('cmdstat_evalsha:'));
  await client.del(clientKey, `${clientKey}:${policy.slot}`);
  return Number(/usec_per_call=([\d.]+)/.exec(stats ?? '')?.[1]);
}

for (const entries of [100, 10_000, 100_000]) {
  console.log(`${entries} entries: ${((await costAt(entries)) / 1000).toFixed(3)} ms of Redis time per decision`);
}
client.disconnect();
