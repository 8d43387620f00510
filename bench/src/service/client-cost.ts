import { createLimiter, type Limiter, type PolicyOptions, type RateLimitStore } from '@sluice/core';
import { createRedisStore } from '@sluice/redis';
import { createServiceClient } from '@sluice/server';
import { Redis } from 'ioredis';
import { parseArgs } from '../lib/args.js';
import { reportAndExit } from '../lib/child-main.js';
import { Histogram } from '../lib/stats.js';

/**
 * What the Node service client costs an app server per request, next to the Redis store it
 * replaces: one limiter over each, asked sequentially (latency per decision, what each HTTP
 * request waits) and with 100 in flight (decisions per second of this process).
 */
const args = parseArgs(process.argv.slice(2));
const address = args.get('address') as string;
const redisPort = Number(args.get('redis-port'));
const warmupMs = Number(args.get('warmup-ms'));
const durationMs = Number(args.get('ms'));
const policies: PolicyOptions[] = [{ name: 'per-minute', limit: 1_000_000, window: '1m' }];

async function drive(limiter: Limiter, inFlight: number) {
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
      await limiter.consume(String(next++ % 100_000));
      if (measuring) {
        histogram.record(performance.now() - started);
        done++;
      }
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  return { perSec: done / ((performance.now() - begun - warmupMs) / 1000), p50Us: histogram.quantile(0.5) * 1000 };
}

async function measure(store: RateLimitStore, prefix: string) {
  const limiter = createLimiter({ policies, store, prefix, storeTimeoutMs: 5000, onStoreError: 'throw' });
  const sequential = await drive(limiter, 1);
  const parallel = await drive(limiter, 100);
  return { sequentialP50Us: sequential.p50Us, sequentialPerSec: sequential.perSec, parallelPerSec: parallel.perSec };
}

async function run() {
  const client = new Redis(redisPort, '127.0.0.1', {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    enableAutoPipelining: true,
  });
  await client.connect();
  const redis = await measure(createRedisStore({ client }), 'bench-redis');
  client.disconnect();
  const service = createServiceClient({ address, domain: 'api' });
  const viaService = await measure(service, 'bench-service');
  service.close();
  return { redis, service: viaService };
}

reportAndExit(run());
