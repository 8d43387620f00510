import { rateLimit } from '@sluice/koa';
import { createRedisStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import Koa from 'koa';

// The connection is yours: sluice never closes it. Every app server pointing at this Redis
// shares one count per client, decided atomically by a Lua script on Redis time.
const client = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', {
  // A decision in flight when the connection drops must fail, not be sent again: it may have
  // been counted already (see @sluice/redis, "Failures").
  maxRetriesPerRequest: 0,
});
// ioredis emits an 'error' for every failed reconnect and prints it as unhandled unless someone
// listens; one line per outage is enough (sluice also warns once when it starts failing open).
let redisDown = false;
client.on('error', (error: Error) => {
  if (!redisDown) console.error(`Redis: ${error.message}; retrying in the background.`);
  redisDown = true;
});
client.on('ready', () => {
  redisDown = false;
});

const app = new Koa();
if (process.env.BEHIND_PROXY === '1') {
  // Koa believes X-Forwarded-For from any peer once `proxy` is on; `maxIpsCount` keeps only the
  // entries your own proxies appended. Only do this when clients cannot reach the app directly.
  app.proxy = true;
  app.maxIpsCount = 1;
}

app.use(
  rateLimit({
    policies: [
      { name: 'per-second', limit: 10, window: '1s', algorithm: 'gcra' },
      { name: 'per-hour', limit: 1000, window: '1h' },
    ],
    store: createRedisStore({ client, prefix: 'example:' }),
    // If Redis is down, serve rather than fail (the default), but give up on it after 50 ms.
    onStoreError: 'allow',
    storeTimeoutMs: 50,
  }),
);

app.use((ctx) => {
  ctx.body = { hello: 'world', remaining: ctx.state.rateLimit?.remaining };
});

const port = Number(process.env.PORT ?? 3000);
const server = app.listen(port, '127.0.0.1', () => {
  console.log(
    `koa-redis on http://127.0.0.1:${port}, counting in Redis at ${client.options.host}:${client.options.port} — try: curl -i http://127.0.0.1:${port}/`,
  );
});

process.once('SIGINT', () => {
  server.close();
  void client.quit();
});
