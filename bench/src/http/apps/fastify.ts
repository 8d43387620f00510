import fastifyRateLimit from '@fastify/rate-limit';
import Fastify, { type FastifyPluginAsync } from 'fastify';
import { exportOf } from '../../inproc/contender.js';
import {
  body,
  COUNTED_FIELDS,
  countedRateLimitField,
  createFieldCounter,
  FIXED_HEADERS,
  fixedPolicyField,
  fixedRateLimitFields,
  limits,
  REDIS_COUNTED_FIELDS,
  REDIS_ROUND_TRIP,
  type StartApp,
  sluiceLimit,
} from './app.js';
import { benchRedis, isSluiceStore, redisRoundTrip, sluiceStore } from './stores.js';

/** As the sluice plugin hands them to Fastify: lowercased once (Fastify sends names lowercased). */
const lowercaseFields = fixedRateLimitFields.map(([name, value]) => [name.toLowerCase(), value] as const);
const [policyName, policyValue] = [fixedPolicyField[0].toLowerCase(), fixedPolicyField[1]];

export const startFastify: StartApp = async (setup, port) => {
  const app = Fastify({ logger: false });
  let close: () => void | Promise<void> = () => {};
  const { max, windowMs } = limits(setup.mode);
  if (isSluiceStore(setup.variant)) {
    const plugin = await exportOf<FastifyPluginAsync<Record<string, unknown>>>('@sluice/fastify', 'rateLimitPlugin');
    const store = await sluiceStore(setup);
    await app.register(plugin, { ...sluiceLimit(setup.mode), store: store.store });
    close = store.close;
  } else if (setup.variant === FIXED_HEADERS) {
    app.addHook('onRequest', (_request, reply, done) => {
      for (const [name, value] of lowercaseFields) reply.header(name, value);
      done();
    });
  } else if (setup.variant === COUNTED_FIELDS) {
    const count = createFieldCounter();
    app.addHook('onRequest', (request, reply, done) => {
      reply.header(policyName, policyValue);
      reply.header('ratelimit', count(request.ip));
      done();
    });
  } else if (setup.variant === REDIS_ROUND_TRIP) {
    const { roundTrip, close: closeClient } = await redisRoundTrip(setup);
    app.addHook('onRequest', async (request) => {
      await roundTrip(request.ip);
    });
    close = closeClient;
  } else if (setup.variant === REDIS_COUNTED_FIELDS) {
    const { roundTrip, close: closeClient } = await redisRoundTrip(setup);
    app.addHook('onRequest', async (request, reply) => {
      const used = await roundTrip(request.ip);
      reply.header(policyName, policyValue);
      reply.header('ratelimit', countedRateLimitField(used));
    });
    close = closeClient;
  } else if (setup.variant === '@fastify/rate-limit:memory') {
    await app.register(fastifyRateLimit, { max, timeWindow: windowMs });
  } else if (setup.variant === '@fastify/rate-limit:redis') {
    const client = benchRedis(setup);
    await app.register(fastifyRateLimit, { max, timeWindow: windowMs, redis: client });
    close = () => client.disconnect();
  } else if (setup.variant !== 'bare') {
    throw new Error(`unknown fastify variant ${setup.variant}`);
  }
  app.get('/', async () => body);
  await app.listen({ port, host: '127.0.0.1' });
  return async () => {
    await app.close();
    await close();
  };
};
