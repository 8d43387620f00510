import { fixed, int, rate } from '../lib/format.js';
import type { RunResults } from '../results.js';
import { table } from './table.js';

/** Envoy's default timeout for a rate-limit call: the service must answer far inside it. */
const ENVOY_TIMEOUT_US = 20_000;

/** `sluice serve` on one core, and what the Node client adds next to a Redis store. */
export function serviceSection(results: RunResults): string {
  const rows = results.service ?? [];
  if (rows.length === 0) return 'Not measured in this run.';
  const cells = table(
    [
      'store',
      'in flight',
      'calls/s',
      'p50 µs',
      'p99 µs',
      'p99 / Envoy 20 ms',
      'service cores',
      'calls/s per service core',
      'RSS MB',
      'failed',
    ],
    rows.map((r) =>
      r.error
        ? [r.store, String(r.inFlight), `error: ${r.error}`, '', '', '', '', '', '', '']
        : [
            r.store,
            String(r.inFlight),
            rate(r.callsPerSec),
            int(r.p50Us),
            int(r.p99Us),
            r.p99Us === undefined ? '–' : `${fixed((100 * r.p99Us) / ENVOY_TIMEOUT_US, 1)}%`,
            fixed(r.serviceCores, 2),
            r.serviceCores ? rate((r.callsPerSec ?? 0) / r.serviceCores) : '–',
            fixed(r.rssMb, 0),
            String(r.failed ?? 0),
          ],
    ),
  );
  const note =
    'The load generator (one `@grpc/grpc-js` client process, pinned with `taskset`) shares the other core with Redis; the server under test has its core to itself. `control` is a `@grpc/grpc-js` server that answers OK without deciding, under the same generator: its figures are what gRPC and the generator alone cost, and the gap to `memory` and `redis` is the decision. When the service uses well under a core, the generator is the bottleneck and its queueing shows in the latencies. "calls/s per service core" divides the rate by the share of its core the server used: what it would answer with its core to itself.';
  const cost = results.serviceClientCost;
  if (cost === undefined) return `${cells}\n\n${note}`;
  const clientRows = [
    ['in-process Redis store', cost.redis],
    ['service client → `sluice serve` on Redis', cost.service],
  ] as const;
  const client = table(
    [
      'limiter store (app process)',
      'p50 µs per decision, sequential',
      'decisions/s sequential',
      'decisions/s, 100 in flight',
    ],
    clientRows.map(([name, c]) => [name, int(c.sequentialP50Us), rate(c.sequentialPerSec), rate(c.parallelPerSec)]),
  );
  const added = cost.service.sequentialP50Us - cost.redis.sequentialP50Us;
  return [
    cells,
    '',
    note,
    '',
    `What the Node client adds to each decision next to an in-process Redis store: **${int(added)} µs** at the median (one more hop: app → service → Redis).`,
    '',
    client,
    ...(cost.fastify === undefined ? [] : ['', fastifyTable(cost.fastify)]),
  ].join('\n');
}

/** Fastify with the sluice plugin over the service client and over the Redis store. */
function fastifyTable(fastify: NonNullable<RunResults['serviceClientCost']>['fastify'] & object): string {
  const added = fastify.service.sequentialP50Us - fastify.redis.sequentialP50Us;
  const rows = [
    ['Fastify + sluice, in-process Redis store', fastify.redis],
    ['Fastify + sluice, service client → `sluice serve` on Redis', fastify.service],
  ] as const;
  return [
    table(
      [
        'app (HTTP, keep-alive, generator in the app process)',
        'p50 µs, 1 at a time',
        'p99 µs, 1 at a time',
        'requests/s, 50 at a time',
      ],
      rows.map(([name, c]) => [name, int(c.sequentialP50Us), int(c.sequentialP99Us), rate(c.parallelPerSec)]),
    ),
    '',
    `The service client adds **${int(added)} µs** to each Fastify request at the median.`,
  ].join('\n');
}
