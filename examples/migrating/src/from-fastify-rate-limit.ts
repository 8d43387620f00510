import { rateLimitPlugin } from '@sluice/fastify';
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';

declare module 'fastify' {
  interface FastifyRequest {
    account?: { id: string; plan: 'free' | 'pro' } | undefined;
  }
}

/**
 * After: docs/migrating/fastify-rate-limit.md. Keys by the authenticated user (`preHandler`),
 * a limit per plan, an allow list, bans, notifications, one route with its own limit, and two
 * routes sharing one count.
 */
export async function createApp(options: { clock?: () => number } = {}): Promise<FastifyInstance> {
  const app = Fastify();
  const exceeded: string[] = [];
  app.decorate('exceeded', exceeded);

  // Authentication sets request.account; with hook: 'preHandler' the limit runs after it.
  app.addHook('preValidation', async (request: FastifyRequest) => {
    const token = request.headers.authorization?.replace('Bearer ', '');
    if (token !== undefined) request.account = { id: token, plan: token.startsWith('pro-') ? 'pro' : 'free' };
  });

  // Was: register(fastifyRateLimit, { max: (request) => (request.account?.plan === 'pro' ? 10 : 3),
  //   timeWindow: '1 minute', hook: 'preHandler', keyGenerator: (request) => request.account?.id ?? request.ip,
  //   allowList: ['monitoring'], ban: 3, onExceeded: (request, key) => exceeded.push(key) })
  await app.register(rateLimitPlugin, {
    limit: (request) => (request.account?.plan === 'pro' ? 10 : 3),
    window: '1m',
    hook: 'preHandler',
    key: (request) => request.account?.id ?? request.ip,
    allowList: ['monitoring'],
    ban: { after: 3, duration: '10m' },
    onExceeded: (_request, decision) => {
      exceeded.push(decision.key);
    },
    ...options,
  });

  app.get('/search', async (request) => ({ user: request.account?.id, remaining: request.rateLimit?.remaining }));
  // Was: { config: { rateLimit: { max: 1, timeWindow: '1 minute' } } }
  app.post('/reports', { config: { rateLimit: { limit: 1, window: '1m', hook: 'preHandler' } } }, async () => ({
    queued: true,
  }));
  // Was: { config: { rateLimit: { max: 2, timeWindow: '1 minute', groupId: 'auth' } } } on both
  // routes. The same prefix shares one count.
  const auth = { limit: 2, window: '1m', prefix: 'auth', hook: 'preHandler' } as const;
  app.post('/login', { config: { rateLimit: auth } }, async () => ({ ok: true }));
  app.post('/signup', { config: { rateLimit: auth } }, async () => ({ ok: true }));
  return app;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Keys told to onExceeded, for the example's test. */
    exceeded: string[];
  }
}
