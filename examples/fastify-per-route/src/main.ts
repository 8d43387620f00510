import { rateLimitPlugin } from '@sluice/fastify';
import Fastify from 'fastify';

const app = Fastify({ logger: false });

// Every route registered after this, here and in child contexts: 100 requests a minute per IP.
await app.register(rateLimitPlugin, { limit: 100, window: '1m' });

// No limit on the health check.
app.get('/health', { config: { rateLimit: false } }, async () => ({ ok: true }));

// A route's own limit replaces the plugin-wide one; other plugin options still apply.
app.post(
  '/login',
  {
    config: { rateLimit: { policies: [{ name: 'login', limit: 5, window: '15m', algorithm: 'sliding-window-log' }] } },
  },
  async (request) => ({ ok: true, attemptsLeft: request.rateLimit?.remaining }),
);

// Shape instead of refusing: up to 10 searches a second, extra ones wait their turn (at most 2 s).
app.get(
  '/search',
  { config: { rateLimit: { limit: 10, window: '1s', algorithm: 'gcra', queue: { maxDelayMs: '2s' } } } },
  async (request) => ({ results: [], waitedMs: request.rateLimit?.delayMs }),
);

// A second registration inside an encapsulated context adds a limit for its routes only;
// both limits report their RateLimit items.
await app.register(
  async (admin) => {
    await admin.register(rateLimitPlugin, { name: 'admin', limit: 10, window: '1m', headers: { legacy: true } });
    admin.get('/stats', async () => ({ uptimeS: Math.round(process.uptime()) }));
  },
  { prefix: '/admin' },
);

const port = Number(process.env.PORT ?? 3000);
await app.listen({ port, host: '127.0.0.1' });
console.log(
  `fastify-per-route on http://127.0.0.1:${port} — try: curl -i -X POST http://127.0.0.1:${port}/login (and /search, /health, /admin/stats)`,
);
