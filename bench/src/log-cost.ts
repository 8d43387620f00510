/**
 * Cost of one sliding-window-log decision by the length of the client's log: on the memory
 * store, µs per decision in this process at 100, 10k, 100k and 1M entries; on Redis, Redis
 * time per decision at 100, 10k and 100k entries, from Redis's own `INFO commandstats`
 * (script time inside Redis, not the round trip). `memory` as the argument runs the first alone.
 *   source scripts/redis-up.sh && pnpm --dir bench exec tsx src/log-cost.ts [memory]
 */
import { createLimiter, createMemoryStore, toPolicy } from '@sluice/core';
import { createRedisStore } from '@sluice/redis';
import { Redis } from 'ioredis';

const NOW = 1_700_000_000_000;
const WINDOW = 3_600_000;
const DECISIONS = 200;
const MEMORY_DECISIONS = 200_000;

/**
 * µs per memory-store decision with `entries` in the log, steady: the window is `entries` ms
 * and one request comes a millisecond, so each decision trims one entry and appends one.
 */
function memoryCostAt(entries: number): number {
  const options = { limit: entries, window: entries, algorithm: 'sliding-window-log' } as const;
  const store = createMemoryStore();
  const policies = [toPolicy(options, 'options')];
  const charge = { namespace: 'cost', key: 'k', policies, capacities: [entries], cost: 1, now: NOW - entries };
  for (let i = 0; i < entries; i++, charge.now++) store.consumeOneSync(charge);
  const start = performance.now();
  for (let i = 0; i < MEMORY_DECISIONS; i++, charge.now++) {
    if (!store.consumeOneSync(charge).allowed) throw new Error(`decision ${i} was not made`);
  }
  return ((performance.now() - start) * 1000) / MEMORY_DECISIONS;
}

async function redisCostAt(client: Redis, entries: number): Promise<number> {
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

memoryCostAt(10_000); // warms the JIT up, so the first size is not charged for it
for (const entries of [100, 10_000, 100_000, 1_000_000]) {
  console.log(`memory, ${entries} entries: ${memoryCostAt(entries).toFixed(3)} µs per decision`);
}
if (process.argv[2] !== 'memory') {
  const client = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: 0 });
  for (const entries of [100, 10_000, 100_000]) {
    const ms = (await redisCostAt(client, entries)) / 1000;
    console.log(`redis, ${entries} entries: ${ms.toFixed(3)} ms of Redis time per decision`);
  }
  client.disconnect();
}
