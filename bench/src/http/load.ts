import { createRequire } from 'node:module';
import { parseArgs } from '../lib/args.js';
import { reportAndExit } from '../lib/child-main.js';
import { Histogram } from '../lib/stats.js';

/**
 * The load generator, in its own process on the other core: a warm-up run, then a measured
 * run against the same server process. Latency is recorded per response as a float (the
 * built-in histogram has whole-millisecond resolution and skips non-2xx responses, which
 * would hide the 429 path).
 */
interface Instance {
  on(event: 'response', listener: (client: unknown, status: number, bytes: number, ms: number) => void): void;
}
type Autocannon = (
  options: Record<string, unknown>,
  done: (error: Error | null, result: { errors: number; timeouts: number }) => void,
) => Instance;

const require = createRequire(import.meta.url);
const autocannon = require('autocannon') as Autocannon;

const args = parseArgs(process.argv.slice(2));
const url = `http://127.0.0.1:${args.get('port')}/`;
const connections = Number(args.get('connections') ?? 50);

function run(seconds: number, histogram?: Histogram) {
  const statuses = new Map<number, number>();
  return new Promise<{ seconds: number; responses: number; statuses: Map<number, number>; errors: number }>(
    (resolve, reject) => {
      const start = performance.now();
      let responses = 0;
      const instance = autocannon({ url, connections, pipelining: 1, duration: seconds }, (error, result) => {
        if (error) reject(error);
        else
          resolve({
            seconds: (performance.now() - start) / 1000,
            responses,
            statuses,
            errors: result.errors + result.timeouts,
          });
      });
      if (histogram === undefined) return;
      instance.on('response', (_client, status, _bytes, ms) => {
        responses++;
        histogram.record(ms);
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
      });
    },
  );
}

/** Started alongside the server to save its start-up time; the harness says `go` once the probes passed. */
function go(): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no go within 60 s')), 60_000);
    process.stdin.setEncoding('utf8').on('data', (chunk: string) => {
      if (!chunk.includes('go')) return;
      clearTimeout(timer);
      process.stdin.pause();
      resolve();
    });
  });
}

async function main() {
  if (args.has('wait-go')) await go();
  await run(Number(args.get('warmup') ?? 1));
  const histogram = new Histogram();
  process.stdout.write('measuring\n');
  const measured = await run(Number(args.get('duration') ?? 5), histogram);
  process.stdout.write('measured\n');
  const expected = args.get('expect') === '429' ? 429 : 200;
  return {
    rps: measured.responses / measured.seconds,
    p50Ms: histogram.quantile(0.5),
    p99Ms: histogram.quantile(0.99),
    expectedShare: (measured.statuses.get(expected) ?? 0) / Math.max(1, measured.responses),
    errors: measured.errors,
  };
}

reportAndExit(main());
