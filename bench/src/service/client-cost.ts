import { Agent, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLimiter, type Limiter, type PolicyOptions, type RateLimitStore } from '@sluice/core';
import { rateLimitPlugin } from '@sluice/fastify';
import { createRedisStore } from '@sluice/redis';
import { createServiceClient } from '@sluice/server';
import Fastify from 'fastify';
import { Redis } from 'ioredis';
import { parseArgs } from '../lib/args.js';
import { reportAndExit } from '../lib/child-main.js';
import { Histogram } from '../lib/stats.js';

/**
 * What the Node service client costs an app server per request, next to the Redis store it
 * replaces: one limiter over each, asked sequentially (latency per decision, what each HTTP
 * request waits) and with 100 in flight (decisions per second of this process); then a
 * Fastify app with the sluice plugin over each, asked over keep-alive HTTP by this process,
 * one request at a time and 50 at a time.
 */
const args = parseArgs(process.argv.slice(2));
const address = args.get('address') as string;
const redisPort = Number(args.get('redis-port'));
const warmupMs = Number(args.get('warmup-ms'));
const durationMs = Number(args.get('ms'));
const policies: PolicyOptions[] = [{ name: 'per-minute', limit: 1_000_000, window: '1m' }];

/** Runs `once` in `inFlight` lanes for the warm-up and the measured time. */
async function drive(once: (i: number) => Promise<unknown>, inFlight: number) {
  const histogram = new Histogram();
  let done = 0;
  let next = 0;
  let measuring = false;
  const begun = performance.now();
  const stopAt = begun + warmupMs + durationMs;
  setTimeout(() => {
    measuring = true;
  }, warmupMs);
  const lane = async () => {
    while (performance.now() < stopAt) {
      const started = performance.now();
      await once(next++);
      if (measuring) {
        histogram.record(performance.now() - started);
        done++;
      }
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  return {
    perSec: done / ((performance.now() - begun - warmupMs) / 1000),
    p50Us: histogram.quantile(0.5) * 1000,
    p99Us: histogram.quantile(0.99) * 1000,
  };
}

async function measure(store: RateLimitStore, prefix: string) {
  const limiter: Limiter = createLimiter({ policies, store, prefix, storeTimeoutMs: 5000, onStoreError: 'throw' });
  const consume = (i: number) => limiter.consume(String(i % 100_000));
  const sequential = await drive(consume, 1);
  const parallel = await drive(consume, 100);
  return { sequentialP50Us: sequential.p50Us, sequentialPerSec: sequential.perSec, parallelPerSec: parallel.perSec };
}

/** A Fastify app limiting every request through `store`, asked over HTTP. */
async function measureFastify(store: RateLimitStore, prefix: string) {
  const app = Fastify({ logger: false });
  await app.register(rateLimitPlugin, { policies, store, prefix, storeTimeoutMs: 5000, onStoreError: 'throw' });
  app.get('/', async () => 'ok');
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  const agent = new Agent({ keepAlive: true, maxSockets: 50 });
  const get = () =>
    new Promise<void>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path: '/', agent }, (res) => {
        if (res.statusCode !== 200) reject(new Error(`status ${res.statusCode}`));
        res.resume().once('end', resolve);
      });
      req.once('error', reject).end();
    });
  const sequential = await drive(get, 1);
  const parallel = await drive(get, 50);
  agent.destroy();
  await app.close();
  return { sequentialP50Us: sequential.p50Us, sequentialP99Us: sequential.p99Us, parallelPerSec: parallel.perSec };
}

async function run() {
  const client = new Redis(redisPort, '127.0.0.1', {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    enableAutoPipelining: true,
  });
  await client.connect();
  const service = createServiceClient({ address, domain: 'api' });
  const redisStore = createRedisStore({ client });
  const redis = await measure(redisStore, 'bench-redis');
  const viaService = await measure(service, 'bench-service');
  const fastify = {
    redis: await measureFastify(redisStore, 'bench-fastify-redis'),
    service: await measureFastify(service, 'bench-fastify-service'),
  };
  client.disconnect();
  service.close();
  return { redis, service: viaService, fastify };
}

reportAndExit(run());
