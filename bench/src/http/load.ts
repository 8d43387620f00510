import { createRequire } from 'node:module';
import { createInterface } from 'node:readline';
import { parseArgs } from '../lib/args.js';
import { Histogram } from '../lib/stats.js';

/**
 * The load generator, one process on the other core for a whole framework group: it loads one
 * server at a time, or two at once (a pair), for as long as the harness asks, and answers each
 * command with one JSON line, one run per target. Commands, one JSON line each on stdin:
 * `{"seconds": 0.5, "targets": [{"port": 3917, "expect": 200}]}`.
 * Latency is recorded per response as a float (the built-in histogram has whole-millisecond
 * resolution and skips non-2xx responses, which would hide the 429 path).
 */
interface Instance {
  on(event: 'response', listener: (client: unknown, status: number, bytes: number, ms: number) => void): void;
}
type Autocannon = (
  options: Record<string, unknown>,
  done: (error: Error | null, result: { errors: number; timeouts: number }) => void,
) => Instance;

export interface LoadTarget {
  port: number;
  expect: 200 | 429;
}

export interface LoadCommand {
  seconds: number;
  /** Loaded at once, each with its own connections. */
  targets: LoadTarget[];
}

export interface LoadRun {
  responses: number;
  seconds: number;
  p50Ms: number;
  p99Ms: number;
  /** Share of responses with the expected status. */
  expectedShare: number;
  errors: number;
}

const require = createRequire(import.meta.url);
const autocannon = require('autocannon') as Autocannon;

const args = parseArgs(process.argv.slice(2));
const connections = Number(args.get('connections') ?? 50);
/**
 * autocannon checks for the end of a run at each sample (every second by default), so a short
 * run would last a whole second: sampling often ends it on time.
 */
const STOP_CHECK_MS = 20;

function run({ port, expect }: LoadTarget, seconds: number): Promise<LoadRun> {
  const histogram = new Histogram();
  let expected = 0;
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const url = `http://127.0.0.1:${port}/`;
    const instance = autocannon(
      { url, connections, pipelining: 1, duration: seconds, sampleInt: STOP_CHECK_MS },
      (error, result) => {
        if (error) {
          reject(error);
          return;
        }
        resolve({
          responses: histogram.count,
          seconds: (performance.now() - start) / 1000,
          p50Ms: histogram.quantile(0.5),
          p99Ms: histogram.quantile(0.99),
          expectedShare: expected / Math.max(1, histogram.count),
          errors: result.errors + result.timeouts,
        });
      },
    );
    instance.on('response', (_client, status, _bytes, ms) => {
      histogram.record(ms);
      if (status === expect) expected++;
    });
  });
}

// One command at a time, in order: the harness waits for each answer before the next.
const lines = createInterface({ input: process.stdin });
let queue = Promise.resolve();
lines.on('line', (line) => {
  queue = queue.then(async () => {
    try {
      const { seconds, targets } = JSON.parse(line) as LoadCommand;
      const runs = await Promise.all(targets.map((target) => run(target, seconds)));
      process.stdout.write(`${JSON.stringify({ runs })}\n`);
    } catch (error) {
      process.stdout.write(`${JSON.stringify({ error: (error as Error).message })}\n`);
    }
  });
});
lines.once('close', () => {
  queue.then(() => process.exit(0));
});
// Never outlive the harness.
const parent = process.ppid;
setInterval(() => {
  if (process.ppid !== parent) process.exit(2);
}, 1000).unref();
