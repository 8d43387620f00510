import { rateLimitPlugin } from '@sluice/fastify';
import type { RulesWatcher } from '@sluice/rules';
import Fastify, { type FastifyInstance } from 'fastify';

/**
 * The app: every route limited by the rules in force. A request sends these descriptors; a
 * rule applies where one matches (see rules/api.yaml).
 */
export async function createApp(rules: RulesWatcher): Promise<FastifyInstance> {
  const app = Fastify();
  await app.register(rateLimitPlugin, {
    rules,
    descriptors: [['remote_address'], ['route', 'remote_address'], ['header.x-api-key']],
  });
  app.get('/', async (request) => ({ hello: 'world', remaining: request.rateLimit?.remaining }));
  app.get('/search', async (request) => ({ results: [], remaining: request.rateLimit?.remaining }));
  return app;
}
