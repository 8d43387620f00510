import { randomUUID } from 'node:crypto';
import { createLimiter, toPolicy } from '@sluice/core';
import { createRedisStore } from '@sluice/redis';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectRedis, deleteKeys, standaloneRedis } from '../helpers/redis-env.js';
import { encodeStates } from '../helpers/redis-state.js';

const target = await standaloneRedis();
const NOW = 1_700_000_000_000;
const WINDOW = 3_600_000;
const ENTRIES = 300_000;

describe.skipIf(target.skip)('a sliding-window-log of 300k entries on Redis', () => {
  const prefix = `sluice-test:${randomUUID()}:`;
  let client: Redis;
  beforeAll(async () => {
    client = await connectRedis(target.require());
  });
  afterAll(async () => {
    if (client === undefined) return;
    await deleteKeys(client, prefix);
    client.disconnect();
  });

  // Each decision used to read the whole log: over 100 ms of Redis time at 100k entries, so
  // with the default storeTimeoutMs most decisions failed open.
  it('decides within the default storeTimeoutMs, exactly, however long the log', async () => {
    const options = { name: 'log', limit: ENTRIES + 10, window: WINDOW, algorithm: 'sliding-window-log' } as const;
    const policy = toPolicy(options, 'options');
    const clientKey = `${prefix}{long|k}`;
    // The log as the store keeps it: one entry a millisecond over the last 300 s, and its total.
    for (let from = 0; from < ENTRIES; from += 10_000) {
      const values: number[] = [];
      for (let i = from; i < from + 10_000; i++) values.push(NOW - ENTRIES + i, 1);
      await client.rpush(`${clientKey}:${policy.slot}`, ...values);
    }
    const state = { numbers: [ENTRIES, 0, 0], used: ENTRIES, resetAt: NOW + WINDOW };
    await client.set(clientKey, encodeStates([{ slot: policy.slot, version: policy.version, ...state }]), 'PX', 60_000);
    let clock = NOW;
    const store = createRedisStore({ client, prefix });
    const limiter = createLimiter({
      policies: [options],
      store,
      prefix: 'long',
      clock: () => clock,
    });
    const decisions = [];
    for (let i = 0; i < 12; i++) {
      clock++;
      decisions.push(await limiter.consume('k'));
    }
    expect(decisions.map((d) => d.reason)).toEqual(Array(12).fill(undefined));
    expect(decisions.map((d) => d.allowed)).toEqual([...Array(10).fill(true), false, false]);
    // A window on, the 300k oldest entries leave at once. Each entry is read once on its way
    // out, so this one decision pays for them all: given the time, it trims them exactly.
    clock = NOW + WINDOW;
    const patient = createLimiter({
      policies: [options],
      store,
      prefix: 'long',
      clock: () => clock,
      storeTimeoutMs: 10_000,
    });
    const later = await patient.consume('k');
    expect(later).toMatchObject({ allowed: true, remaining: 10 + ENTRIES - 11 });
    expect(await client.llen(`${clientKey}:${policy.slot}`)).toBe(2 * 11);
  }, 60_000);
});
