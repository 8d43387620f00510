import { Unavailable } from '../inproc/contender.js';
import { parseArgs } from '../lib/args.js';
import type { StartApp } from './apps/app.js';

/**
 * The server under test, in its own process: prints `ready` once listening, stops on SIGTERM.
 * Only its own framework's app is loaded: a group starts a dozen servers at once.
 */
const starters: Record<string, () => Promise<StartApp>> = {
  node: async () => (await import('./apps/node.js')).startNode,
  express: async () => (await import('./apps/express.js')).startExpress,
  fastify: async () => (await import('./apps/fastify.js')).startFastify,
  koa: async () => (await import('./apps/koa.js')).startKoa,
};

const args = parseArgs(process.argv.slice(2));
const framework = args.get('framework') ?? 'node';
const port = Number(args.get('port'));
const lifetimeMs = Number(args.get('lifetime') ?? 120_000);
const parent = process.ppid;

async function main() {
  const load = starters[framework];
  if (load === undefined) throw new Error(`unknown framework ${framework}`);
  const start = await load();
  const close = await start(
    {
      variant: args.get('variant') ?? 'bare',
      mode: args.get('mode') === 'deny' ? 'deny' : 'pass',
      redisPort: args.has('redis-port') ? Number(args.get('redis-port')) : undefined,
      redisDb: Number(args.get('redis-db') ?? 0),
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
