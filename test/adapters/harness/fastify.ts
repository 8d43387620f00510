import type { AddressInfo } from 'node:net';
import type { Decision } from '@sluice/core';
import { type RateLimitPluginOptions, rateLimitPlugin } from '@sluice/fastify';
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import type { Harness } from './types.js';

const asOptions = (options: Record<string, unknown>) => options as unknown as RateLimitPluginOptions;

export const fastifyHarness: Harness = {
  name: 'fastify',
  async start(spec) {
    const trustProxy = spec.trust === 'loopback' ? 'loopback' : spec.trust === 'all';
    const app = Fastify({ trustProxy });
    let hits = 0;
    const errors: unknown[] = [];
    app.setErrorHandler((error, _request, reply) => {
      errors.push(error);
      return reply.code(500).send();
    });
    const handler = async (request: FastifyRequest, reply: FastifyReply) => {
      hits++;
      reply.code(Number(request.headers['x-status'] ?? 200));
      return { decision: request.rateLimit ?? null };
    };
    for (const options of spec.limits ?? []) await app.register(rateLimitPlugin, asOptions(options));
    // A further limit on one route is a registration in the route's own encapsulated context.
    for (const [path, options] of Object.entries(spec.routeLimits ?? {})) {
      await app.register(async (child) => {
        await child.register(rateLimitPlugin, asOptions(options));
        child.get(path, handler);
      });
    }
    app.get('/', handler);
    app.get('/other', handler);
    app.get('/hang', () => {
      hits++;
      return new Promise(() => {});
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as AddressInfo;
    const handle = app.hasDecorator('rateLimiter') ? app.rateLimiter : undefined;
    const limiterFor = handle?.limiterFor;
    return {
      url: `http://127.0.0.1:${port}`,
      hits: () => hits,
      errors: () => errors,
      close: () => app.close(),
      ...(limiterFor === undefined ? {} : { handle: { limiter: handle?.limiter, limiterFor } }),
    };
  },
  header: (req, name) => {
    const value = (req as FastifyRequest).headers[name.toLowerCase()];
    return Array.isArray(value) ? value.join(', ') : value;
  },
  teapot: () => (_request: FastifyRequest, reply: FastifyReply, decision: Decision) =>
    reply.code(418).send({ custom: true, violated: decision.policies.filter((p) => !p.allowed).map((p) => p.name) }),
  async configure(options) {
    const app = Fastify();
    try {
      await app.register(rateLimitPlugin, asOptions(options));
      app.get('/', async () => 'ok');
      await app.ready();
    } finally {
      await app.close();
    }
  },
};
