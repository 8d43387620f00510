import type { AddressInfo } from 'node:net';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { createLimiter } from '@sluice/core';
import { parseRules } from '@sluice/rules';
import { createDecisionServer, createServiceClient, type DecisionServer } from '@sluice/server';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/redis-server.js';

const rules = parseRules(
  'domain: api\ndescriptors:\n  - key: per-ip\n    rate_limit: { unit: hour, requests_per_unit: 2 }\n',
);
const quiet = { warn() {}, line() {} };
const policies = [{ name: 'per-ip', limit: 2, window: '1h' }] as const;
const ended: (() => unknown)[] = [];
afterEach(async () => {
  for (const end of ended.splice(0)) await end();
});

async function serve(grpcPort = 0): Promise<DecisionServer & { address: string }> {
  const server = createDecisionServer({ rules, grpcPort, httpPort: 0, host: '127.0.0.1', log: quiet });
  const ports = await server.listen();
  ended.push(() => server.close());
  return Object.assign(server, { address: `127.0.0.1:${ports.grpcPort}` });
}

function limiterOn(address: string, options: { maxReconnectBackoffMs?: number } = {}) {
  const store = createServiceClient({ address, domain: 'api', logger: quiet, ...options });
  ended.push(() => store.close());
  // 'throw', so a store failure shows as a rejection; a wide timeout for a loaded machine.
  const limiter = createLimiter({ store, policies, onStoreError: 'throw', storeTimeoutMs: 5000, logger: quiet });
  return { store, limiter };
}

// The service refuses an empty descriptor value, so every decision on an empty key (an
// adapter's `key` returning '' for an anonymous client) failed as a store outage: let through
// unlimited under the default 'allow', refused with 503 under 'deny'.
it('an empty client key is counted by the service like any other', async () => {
  const { limiter } = limiterOn((await serve()).address);
  const decisions = [];
  for (let i = 0; i < 3; i++) decisions.push(await limiter.consume(''));
  expect(decisions.map((d) => d.allowed)).toEqual([true, true, false]);
  expect(decisions.every((d) => d.reason === undefined)).toBe(true);
  // Its count is its own.
  expect(await limiter.consume('#other')).toMatchObject({ allowed: true, remaining: 1 });
});

describe('close()', () => {
  // grpc-js cancels a call asked in the turn its channel closes: decisions asked just before
  // close() failed as an outage ("Channel closed before call started").
  it('lets decisions already asked finish, then resolves', async () => {
    const { store, limiter } = limiterOn((await serve()).address);
    await limiter.consume('warm');
    const asked = ['a', 'b', 'c'].map((key) => limiter.consume(key));
    const closing = store.close();
    expect((await Promise.all(asked)).map((d) => d.allowed)).toEqual([true, true, true]);
    await expect(closing).resolves.toBeUndefined();
    expect(store.close()).toBe(closing);
  });

  // A call after close() failed with grpc-js's bare "Channel has been shut down", no code.
  it('refuses a decision asked afterwards with a coded error naming the closed client', async () => {
    const { store, limiter } = limiterOn((await serve()).address);
    await store.close();
    await expect(limiter.consume('late')).rejects.toMatchObject({
      code: 'ERR_SLUICE_STORE_UNAVAILABLE',
      cause: { code: 'ERR_SLUICE_STORE_UNAVAILABLE', message: expect.stringContaining('is closed') },
    });
  });

  // A client whose warm-up had ended went on saying it was ready once closed.
  it('is no longer ready once closed, however its warm-up went', async () => {
    const { store } = limiterOn((await serve()).address);
    await store.ready();
    await store.close();
    await expect(store.ready()).rejects.toMatchObject({
      code: 'ERR_SLUICE_STORE_UNAVAILABLE',
      message: expect.stringContaining('is closed'),
    });
  });

  // Closed while its warm-up still waited for a connection (the service down at start-up),
  // grpc-js's channel went on reconnecting for good after close() had resolved.
  it('stops connecting to a service that was down when it closed', async () => {
    let connections = 0;
    const down = createServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => down.listen(0, '127.0.0.1', resolve));
    ended.push(() => new Promise((resolve) => down.close(resolve)));
    const { port } = down.address() as AddressInfo;
    const store = createServiceClient({
      address: `127.0.0.1:${port}`,
      domain: 'api',
      logger: quiet,
      maxReconnectBackoffMs: 100,
    });
    await store.close();
    await expect(store.ready()).rejects.toMatchObject({ code: 'ERR_SLUICE_STORE_UNAVAILABLE' });
    // A reconnect every 100 ms would show some 10 here.
    await sleep(300);
    const before = connections;
    await sleep(1000);
    expect(connections - before).toBe(0);
  });
});

// gRPC's reconnect backoff grows by 1.6 a try up to 2 minutes: a service down for a minute
// stayed failed for most of another one after it was back. This needs real time: the backoff
// runs on grpc-js's own timers. Down ~3.2 s, the old schedule (1, 2.6, 5.2 s, ±20 %) tries
// next at least 0.9 s after the service returns; capped at 100 ms it tries within ~0.12 s.
it('a service that comes back is asked again within maxReconnectBackoffMs', async () => {
  const port = await freePort();
  const { limiter } = limiterOn(`127.0.0.1:${port}`, { maxReconnectBackoffMs: 100 });
  await expect(limiter.consume('k')).rejects.toMatchObject({ code: 'ERR_SLUICE_STORE_UNAVAILABLE' });
  await new Promise((resolve) => setTimeout(resolve, 3200));
  await serve(port);
  const back = performance.now();
  for (;;) {
    const answered = await limiter.consume('k').then(
      () => true,
      () => false,
    );
    if (answered) break;
    expect(performance.now() - back).toBeLessThan(600);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
});
