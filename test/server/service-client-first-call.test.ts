import { createLimiter, isSluiceError } from '@sluice/core';
import { createServiceClient, type ServiceClient } from '@sluice/server';
import { afterEach, expect, it } from 'vitest';
import { freePort } from '../helpers/redis-server.js';
import { type ServingSluice, startSluice } from '../helpers/sluice-process.js';

// The first decision of a fresh app on a fresh `sluice serve` paid every one-time cost of the
// call path on both sides (protobuf code generation, grpc-js's and HTTP/2's first call), about
// 35 ms against 2-5 ms for later ones: under the README's `storeTimeoutMs: 20` the app logged
// WRN_SLUICE_STORE_UNAVAILABLE and served it unlimited, while the service still counted it.

const rules = new URL('./fixtures/api.yaml', import.meta.url).pathname; // per-ip: 2 an hour
const policies = [{ name: 'per-ip', limit: 2, window: '1h' }] as const;
const quiet = { warn() {} };
const ended: (() => unknown)[] = [];
afterEach(async () => {
  for (const end of ended.splice(0)) await end();
});

async function serve(port = 0): Promise<ServingSluice> {
  const sluice = await startSluice(['--rules', rules, '--grpc-port', String(port)]);
  ended.push(() => sluice.kill());
  return sluice;
}

function client(address: string, deadlineMs?: number): ServiceClient {
  const store = createServiceClient({ address, domain: 'api', logger: quiet, ...(deadlineMs && { deadlineMs }) });
  ended.push(() => store.close());
  return store;
}

async function callsCounted(sluice: ServingSluice): Promise<string[]> {
  const metrics = await (await fetch(`${sluice.httpUrl}/metrics`)).text();
  return metrics.split('\n').filter((line) => /^sluice_(service_calls_total|decisions_total)\{/.test(line));
}

it('after ready(), decides with the service from the first call', async () => {
  const store = client((await serve()).grpcAddress);
  await store.ready();
  // 'throw', so that a call not answered fails the test instead of passing. The README's 20 ms
  // is a latency, which a test file among others on a loaded machine cannot hold to (a warm
  // call took longer here once): the bound is generous, the latency the benchmark's question.
  const limiter = createLimiter({ store, policies, storeTimeoutMs: 2000, onStoreError: 'throw', logger: quiet });
  const decisions = [await limiter.consume('a'), await limiter.consume('a'), await limiter.consume('a')];
  expect(decisions.map((d) => [d.allowed, d.remaining])).toEqual([
    [true, 1],
    [true, 0],
    [false, 0],
  ]);
});

it('ready() is no decision: the service counts no call for it and the quota stays whole', async () => {
  const sluice = await serve();
  const store = client(sluice.grpcAddress);
  await store.ready();
  expect(await callsCounted(sluice)).toEqual([]);
  const limiter = createLimiter({ store, policies, storeTimeoutMs: 5000, onStoreError: 'throw', logger: quiet });
  expect(await limiter.consume('a')).toMatchObject({ allowed: true, remaining: 1 });
  expect(await callsCounted(sluice)).toContain('sluice_service_calls_total{transport="grpc",result="ok"} 1');
});

it('ready() waits for a service that is still starting', async () => {
  const port = await freePort();
  const store = client(`127.0.0.1:${port}`, 30_000);
  let ready = false;
  const readying = store.ready().then(() => {
    ready = true;
  });
  await serve(port);
  await readying;
  expect(ready).toBe(true);
});

it('ready() rejects when no service answers within deadlineMs; unasked, that ends nothing', async () => {
  const address = `127.0.0.1:${await freePort()}`;
  // Never asked: its failure must not surface as an unhandled rejection, which fails the run.
  client(address, 200);
  const error = await client(address, 200)
    .ready()
    .catch((thrown: unknown) => thrown);
  expect(isSluiceError(error) && error.code).toBe('ERR_SLUICE_STORE_UNAVAILABLE');
  expect((error as Error).message).toContain(`${address} did not answer within 200 ms: No connection established`);
  expect((error as Error).message).toContain('ECONNREFUSED');
});
