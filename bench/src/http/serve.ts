import { Unavailable } from '../inproc/contender.js';
import { parseArgs } from '../lib/args.js';
import type { StartApp } from './apps/app.js';
import { startExpress } from './apps/express.js';
import { startFastify } from './apps/fastify.js';
import { startKoa } from './apps/koa.js';
import { startNode } from './apps/node.js';

/** The server under test, in its own process: prints `ready` once listening, stops on SIGTERM. */
const starters: Record<string, StartApp> = {
  node: startNode,
  express: startExpress,
  fastify: startFastify,
  koa: startKoa,
};

const args = parseArgs(process.argv.slice(2));
const framework = args.get('framework') ?? 'node';
const port = Number(args.get('port'));
const lifetimeMs = Number(args.get('lifetime') ?? 120_000);
const parent = process.ppid;

async function main() {
  const start = starters[framework];
  if (start === undefined) throw new Error(`unknown framework ${framework}`);
  const close = await start(
    {
      variant: args.get('variant') ?? 'bare',
      mode: args.get('mode') === 'deny' ? 'deny' : 'pass',
      redisPort: args.has('redis-port') ? Number(args.get('redis-port')) : undefined,
    },
    port,
  );
  const shutdown = () => {
    close().finally(() => process.exit(0));
  };
  process.once('SIGTERM', shutdown);
  process.once('SIGINT', shutdown);
  // Never outlive the run: not past a fixed lifetime, not once the orchestrator is gone.
  setTimeout(() => process.exit(2), lifetimeMs).unref();
  setInterval(() => {
    if (process.ppid !== parent) process.exit(2);
  }, 1000).unref();
  process.stdout.write('ready\n');
}

main().catch((error: unknown) => {
  if (error instanceof Unavailable) {
    process.stdout.write(`${JSON.stringify({ unavailable: error.message })}\n`);
    process.exit(0);
  }
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
