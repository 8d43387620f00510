import { randomUUID } from 'node:crypto';
import { createMemoryStore, type StoreReply, type StoreRequest, toPolicies } from '@sluice/core';
import { createRedisStore } from '@sluice/redis';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectRedis, deleteKeys, standaloneRedis } from '../helpers/redis-env.js';

const target = await standaloneRedis();
const NOW = 1_700_000_000_000;

/** Policies of small limits, two of them queueing (gcra's delays), so that a run meets every outcome. */
const SHAPES = [
  { limit: 3, window: 1000, maxDelayMs: 700 },
  { limit: 5, window: 4000 },
  { limit: 12, window: 1000 },
  { limit: 8, window: 8000, maxDelayMs: 2000 },
  { limit: 4, window: 3000 },
  { limit: 6, window: 6000 },
];

/** Steps of the injected clock between calls: several calls at one instant, then windows passing. */
const STEPS = [0, 0, 0, 0, 0, 150, 0, 300, 0, 700, 0, 0, 1200, 2500, 4100, 0];

/**
 * A full call of 32 decisions, as a busy server sends it, on the straight-line path: the block
 * written out for up to four policies, whose reply table is made for a whole call, and the loop
 * for more. Each reply is read from the packed outcomes (remaining, reset and the signed wait),
 * so a refusal where other policies allow, and a delay, must come back as core's memory store
 * decides them.
 */
describe.skipIf(target.skip)('Redis store: a full call of 32 decisions on the straight-line path', () => {
  const prefix = `sluice-test:${randomUUID()}:`;
  let client: Redis;
  let scriptCalls = 0;

  beforeAll(async () => {
    client = await connectRedis(target.require());
    const send = client.sendCommand.bind(client);
    client.sendCommand = ((command: { name: string }, ...rest: unknown[]) => {
      if (command.name === 'evalsha' || command.name === 'eval') scriptCalls++;
      return (send as (...args: unknown[]) => unknown)(command, ...rest);
    }) as typeof client.sendCommand;
  });

  afterAll(async () => {
    if (client === undefined) return;
    await deleteKeys(client, prefix);
    client.disconnect();
  });

  for (const algorithm of ['gcra', 'sliding-window-counter'] as const) {
    for (const count of [1, 2, 4, 5, 6]) {
      it(`${algorithm}, ${count} policies: every decision as the memory store's, one call a step`, async () => {
        const policies = toPolicies(
          SHAPES.slice(0, count).map(({ limit, window, maxDelayMs }, i) => ({
            name: `p${i}`,
            limit,
            window,
            algorithm,
            ...(algorithm === 'gcra' && maxDelayMs !== undefined ? { queue: { maxDelayMs } } : {}),
          })),
        );
        const capacities = policies.map((p) => p.capacity);
        const redis = createRedisStore({ client, prefix, denyCache: false });
        const memory = createMemoryStore();
        const clients = Array.from({ length: 32 }, (_, i) => `client-${i}`);
        const outcomesSeen = new Set<string>();
        let delays = 0;
        let now = NOW;
        const callsBefore = scriptCalls;
        for (const step of STEPS) {
          now += step;
          const request = (key: string): StoreRequest => ({
            namespace: `${algorithm}-${count}`,
            key,
            policies,
            capacities,
            cost: 1,
            now,
          });
          const got: StoreReply[] = await Promise.all(clients.map((key) => redis.consume(request(key))));
          const expected: StoreReply[] = [];
          for (const key of clients) expected.push(await memory.consume(request(key)));
          expect(got).toEqual(expected);
          for (const reply of got) {
            outcomesSeen.add(reply.outcomes.map((o) => o.allowed).join());
            for (const o of reply.outcomes) if (o.delayMs > 0) delays++;
          }
        }
        // Every step's 32 decisions travelled in one call.
        expect(scriptCalls - callsBefore).toBe(STEPS.length);
        // The run met every outcome it is meant to check.
        expect(outcomesSeen.has(Array(count).fill('true').join())).toBe(true);
        if (count > 1) expect([...outcomesSeen].some((o) => o.includes('true') && o.includes('false'))).toBe(true);
        if (algorithm === 'gcra') expect(delays).toBeGreaterThan(0);
      });
    }
  }
});
