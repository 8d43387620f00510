import {
  type AdapterBinding,
  createHttpLimiter,
  type Decision,
  type HttpLimiterOptions,
  type HttpRouteOptions,
  mergeRouteOptions,
  type Outcome,
  PROBLEM_CONTENT_TYPE,
  problemJson,
  problemStatus,
  type RulesHttpOptions,
  SluiceError,
} from '@sluice/core';
import { createMemoryStore } from '@sluice/memory';
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import fp from 'fastify-plugin';

type OnLimited = (request: FastifyRequest, reply: FastifyReply, decision: Decision) => unknown;
type HookDone = Parameters<onRequestHookHandler>[2];

export type RateLimitPluginOptions = (HttpLimiterOptions<FastifyRequest> | RulesHttpOptions<FastifyRequest>) & {
  /** Sends the response for a refused request instead of the default 429 problem document. */
  onLimited?: OnLimited;
  /** `false` limits only routes with `config.rateLimit`; these options are then their defaults. @default true */
  global?: boolean;
  /**
   * Limits requests for routes that do not exist (the not-found handler of this context) with
   * these options, so a scanner probing paths is limited too. @default the value of `global`
   */
  notFound?: boolean;
};

/** A route's own limit: any option, each falling back to the plugin's. */
export type RouteRateLimitOptions = HttpRouteOptions<FastifyRequest> & { onLimited?: OnLimited };

declare module 'fastify' {
  interface FastifyRequest {
    /** The decision of the last sluice limiter that counted this request. */
    rateLimit?: Decision;
  }
  interface FastifyContextConfig {
    /** This route's own limit, replacing the plugin-wide one; `false` turns limiting off here. */
    rateLimit?: RouteRateLimitOptions | false;
  }
}

/** Fastify keeps `trustProxy` private; its options symbol is the only place it can be read. */
function trustProxyOf(app: FastifyInstance): unknown {
  for (let o: object | null = app; o !== null; o = Object.getPrototypeOf(o)) {
    const symbol = Object.getOwnPropertySymbols(o).find((s) => s.description === 'fastify.options');
    if (symbol !== undefined) return (o as Record<symbol, { trustProxy?: unknown }>)[symbol]?.trustProxy;
  }
  return undefined;
}

/**
 * A hop count is trusted by older Fastify and refused by 5.12 and later, which then take every
 * request's address from the socket. The request tells which: a request that came through a
 * proxy (`X-Forwarded-For`) keeps only the socket's address when the count was ignored.
 */
function proxyTrustFor(trustProxy: unknown): AdapterBinding<FastifyRequest, FastifyReply>['proxyTrust'] {
  if (trustProxy === true) return (request) => (request.ips === undefined ? 'none' : 'all');
  if (typeof trustProxy === 'number' && trustProxy > 0) {
    return (request) => {
      const { ips } = request;
      if (ips === undefined) return 'none';
      return ips.length === 1 && request.headers['x-forwarded-for'] !== undefined ? 'ignored' : 'some';
    };
  }
  // `request.ips` exists only when Fastify trusts some proxy.
  return (request) => (request.ips === undefined ? 'none' : 'some');
}

const bindingFor = (trustProxy: unknown): AdapterBinding<FastifyRequest, FastifyReply> => ({
  rawRequest: (request) => request.raw,
  rawResponse: (reply) => reply.raw,
  clientIp: (request) => request.ip,
  proxyTrust: proxyTrustFor(trustProxy),
  trustAdvice:
    "set Fastify's `trustProxy` to your proxies' addresses or CIDRs (a hop count is ignored by Fastify 5.12 and later), never to `true`.",
  defaultStore: () => createMemoryStore(),
  routePattern: (request) => request.routeOptions.url,
  setHeader: (reply, name, value) => reply.header(name, value),
  appendHeader(reply, name, value) {
    // Fastify has no append. Only a request an earlier sluice limiter decided can hold our
    // fields already, so the others skip the lookup.
    const sent = reply.request.rateLimit === undefined ? undefined : reply.getHeader(name);
    reply.header(name, sent === undefined ? value : `${String(sent)}, ${value}`);
  },
});

/**
 * The Content-Type Fastify sends for `PROBLEM_CONTENT_TYPE`: it gives JSON types a charset.
 * Given whole, it spares Fastify parsing and rebuilding the type on every refusal.
 */
const PROBLEM_CONTENT_TYPE_UTF8 = `${PROBLEM_CONTENT_TYPE}; charset=utf-8`;

/** Routes whose own `config.rateLimit` was applied: a second registration must not count them again. */
const ownLimitApplied = new WeakSet<object>();

const plugin: FastifyPluginAsync<RateLimitPluginOptions> = async (app, options) => {
  const { global = true, notFound = global } = options;
  for (const [name, value] of [
    ['global', global],
    ['notFound', notFound],
  ] as const) {
    if (typeof value !== 'boolean') {
      throw new SluiceError('ERR_SLUICE_INVALID_OPTION', `[sluice] Option \`${name}\` must be true or false.`);
    }
  }
  const binding = bindingFor(trustProxyOf(app));
  const appOptions: Record<string, unknown> = { ...options, store: options.store ?? createMemoryStore() };
  delete appOptions.global;
  delete appOptions.notFound;

  const hookFor = (hookOptions: Record<string, unknown>): onRequestHookHandler => {
    const limiter = createHttpLimiter(hookOptions as unknown as RateLimitPluginOptions, binding);
    const onLimited = hookOptions.onLimited as OnLimited | undefined;
    const apply = (outcome: Outcome, request: FastifyRequest, reply: FastifyReply, done: HookDone): void => {
      if (outcome.decision !== undefined) request.rateLimit = outcome.decision;
      if (outcome.action === 'next') done();
      else if (outcome.action === 'gone') reply.hijack();
      else if (onLimited !== undefined) {
        // A handler that sends nothing lets the request go on, as it would from an async hook.
        Promise.resolve(onLimited(request, reply, outcome.decision)).then(() => reply.sent || done(), done);
      } else {
        const { decision } = outcome;
        reply.code(problemStatus(decision)).type(PROBLEM_CONTENT_TYPE_UTF8).send(problemJson(decision));
      }
    };
    // A callback hook, not an async one: with an in-process store the decision is ready at
    // once, and Fastify then goes on without a promise. Replying ends the hook without `done`.
    return function sluiceRateLimit(request, reply, done) {
      let outcome: Outcome | Promise<Outcome>;
      try {
        outcome = limiter.handle(request, reply);
      } catch (error) {
        done(error as Error);
        return;
      }
      if (outcome instanceof Promise) outcome.then((settled) => apply(settled, request, reply, done)).catch(done);
      else apply(outcome, request, reply, done);
    };
  };

  const globalHook = global ? hookFor(appOptions) : undefined;
  if (notFound) {
    // Fastify gives its not-found handler no `onRoute`, only the context's own hooks, which
    // every route of the context runs too: routes go on here, they have their limit already.
    const notFoundHook = globalHook ?? hookFor(appOptions);
    app.addHook('onRequest', function sluiceNotFoundLimit(request, reply, done) {
      if (request.is404) notFoundHook.call(this, request, reply, done);
      else done();
    });
  }
  if (!app.hasRequestDecorator('rateLimit')) app.decorateRequest('rateLimit', undefined);
  app.addHook('onRoute', (route) => {
    const own = route.config?.rateLimit;
    if (own === false || ownLimitApplied.has(route)) return;
    let hook = globalHook;
    if (own !== undefined) {
      ownLimitApplied.add(route);
      hook = hookFor(mergeRouteOptions(appOptions, own, `config.rateLimit of ${route.method} ${route.url}`));
    }
    if (hook === undefined) return;
    const existing = route.onRequest === undefined ? [] : [route.onRequest].flat();
    route.onRequest = [...existing, hook];
  });
};

/**
 * Fastify plugin: `await app.register(rateLimitPlugin, options)` limits every route registered
 * after it, in this context and its children; a route's `config.rateLimit` replaces the limit
 * for that route, and `false` turns it off. Registering it again inside a child context adds a
 * second limit there, and both report their headers.
 */
export const rateLimitPlugin = fp(plugin, { fastify: '5.x', name: '@sluice/fastify' });

export type { Decision, HeadersOptions, PolicyOptions, RulesHttpOptions } from '@sluice/core';
export { ipKey } from '@sluice/core';
