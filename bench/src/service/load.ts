import { type Client, credentials, loadPackageDefinition } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { PROTO_DIR } from '@sluice/server';
import { parseArgs } from '../lib/args.js';
import { reportAndExit } from '../lib/child-main.js';
import { Histogram } from '../lib/stats.js';

/**
 * Load for the decision service: `--inflight` ShouldRateLimit calls kept in flight over one
 * gRPC channel, each for one of 100k client keys, for `--ms` after `--warmup-ms`. Prints
 * calls per second and latency quantiles (µs).
 */
const args = parseArgs(process.argv.slice(2));
const address = args.get('address') as string;
const inFlight = Number(args.get('inflight'));
const warmupMs = Number(args.get('warmup-ms'));
const durationMs = Number(args.get('ms'));

async function run() {
  const definition = loadSync('envoy/service/ratelimit/v3/rls.proto', { includeDirs: [PROTO_DIR], enums: String });
  const api = loadPackageDefinition(definition) as unknown as {
    envoy: { service: { ratelimit: { v3: { RateLimitService: new (a: string, c: unknown) => Client } } } };
  };
  const client = new api.envoy.service.ratelimit.v3.RateLimitService(address, credentials.createInsecure());
  type Call = (request: object, callback: (error: Error | null, response?: { overallCode: string }) => void) => void;
  const call = (client as unknown as { ShouldRateLimit: Call }).ShouldRateLimit.bind(client);
  const histogram = new Histogram();
  let measuring = false;
  let done = 0;
  let failed = 0;
  let stopAt = Number.POSITIVE_INFINITY;
  let next = 0;
  const one = (): Promise<void> =>
    new Promise((resolve) => {
      const key = String(next++ % 100_000);
      const started = performance.now();
      call({ domain: 'bench', descriptors: [{ entries: [{ key: 'client', value: key }] }] }, (error, response) => {
        if (measuring) {
          histogram.record(performance.now() - started);
          done++;
          if (error !== null || response?.overallCode !== 'OK') failed++;
        }
        resolve();
      });
    });
  const lane = async () => {
    while (performance.now() < stopAt) await one();
  };
  setTimeout(() => {
    measuring = true;
  }, warmupMs);
  const begun = performance.now();
  stopAt = begun + warmupMs + durationMs;
  await Promise.all(Array.from({ length: inFlight }, lane));
  const seconds = (performance.now() - begun - warmupMs) / 1000;
  client.close();
  return {
    callsPerSec: done / seconds,
    p50Us: histogram.quantile(0.5) * 1000,
    p99Us: histogram.quantile(0.99) * 1000,
    failed,
  };
}

reportAndExit(run());
