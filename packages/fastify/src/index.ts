import {
  type Decision,
  defaultMemoryStore,
  type HttpLimiterOptions,
  type HttpRouteOptions,
  inRoute,
  limiterSettings,
  mergeRouteOptions,
  POLICY_OPTION_NAMES,
  type RateLimitHandle,
  type RulesHttpOptions,
  SluiceError,
} from '@sluice/core';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest, onRequestHookHandler, RouteOptions } from 'fastify';
import fp from 'fastify-plugin';
import { bindingFor, semicolonEndsPath, trustProxyOf } from './binding.js';
import { createRateLimitHook, type OnLimited, type RateLimitHook, type RateLimitHookEntry } from './rate-limit-hook.js';

export type RateLimitPluginOptions = (
  | HttpLimiterOptions<FastifyRequest, FastifyReply>
  | RulesHttpOptions<FastifyRequest>
  // Only the defaults of routes' own limits: no limit of its own is needed, and none for
  // routes that do not exist (`notFound`).
  | (HttpRouteOptions<FastifyRequest, FastifyReply> & { global: false; notFound?: false | undefined })
) & {
  /** Sends the response for a refused request instead of the default 429 problem document. */
  onLimited?: OnLimited | undefined;
  /** `false` limits only routes with `config.rateLimit`; these options are then their defaults. @default true */
  global?: boolean | undefined;
  /**
   * Limits requests for routes that do not exist (the not-found handler of this context) with
   * these options, so a scanner probing paths is limited too. @default the value of `global`
   */
  notFound?: boolean | undefined;
  /** The hook the limit runs in: `preHandler` to key by a user your auth hook sets. @default 'onRequest' */
  hook?: RateLimitHook | undefined;
};

/** A route's own limit: any option, each falling back to the plugin's. */
export type RouteRateLimitOptions = HttpRouteOptions<FastifyRequest, FastifyReply> & {
  onLimited?: OnLimited | undefined;
  hook?: RateLimitHook | undefined;
};

/** The plugin-wide limiter, and each route's own, for application code (reset, peek, refund). */
export interface RateLimiterHandle {
  /** The plugin-wide limiter; undefined with `global: false` or when `policies` or `limit` is a function. */
  limiter: RateLimitHandle['limiter'];
  /** The plugin-wide limiter of one tier of a `policies` function; undefined with `global: false`. */
  limiterFor: RateLimitHandle['limiterFor'] | undefined;
  /**
   * The handle of the route with its own `config.rateLimit`, by method and URL as registered,
   * and the `constraints` it was registered with (a route told from another of the same method
   * and URL by its host or version).
   */
  route(method: string, url: string, constraints?: Record<string, unknown>): RateLimitHandle | undefined;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The decision of the last sluice limiter that counted this request. */
    rateLimit?: Decision;
  }
  interface FastifyInstance {
    /** The limiters of the first `rateLimitPlugin` registered in this context or above. */
    rateLimiter: RateLimiterHandle;
  }
  interface FastifyContextConfig {
    /** This route's own limit, replacing the plugin-wide one; `false` turns limiting off here. */
    rateLimit?: RouteRateLimitOptions | false | undefined;
  }
}

/** What a registration shares with those inside it. */
interface Registration {
  /** The handles of routes with their own limit, for `app.rateLimiter.route`: one map from the outermost down. */
  routes: Map<string, RateLimitHandle>;
}
/**
 * The innermost registration of a context, read through its prototype chain (Fastify makes a
 * child context with `Object.create`): it alone applies a route's own `config.rateLimit`, over
 * its options.
 */
const kRegistration = Symbol('@sluice/fastify registration');
type WithRegistration = { [kRegistration]?: Registration };

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
  const binding = bindingFor(trustProxyOf(app), semicolonEndsPath(app));
  // One store per registration, so routes that give the same `prefix` share a count.
  const store = options.store === undefined ? defaultMemoryStore() : options.store;
  const appOptions: Record<string, unknown> = { ...options, store };
  delete appOptions.global;
  delete appOptions.notFound;
  const registration: Registration = { routes: (app as WithRegistration)[kRegistration]?.routes ?? new Map() };
  (app as WithRegistration)[kRegistration] = registration;
  const { routes } = registration;

  // Every limit this registration makes gives its namespace up when the app closes: an app
  // built again in the process over the same store (a test's next app) takes it anew.
  const made: RateLimitHookEntry[] = [];
  app.addHook('onClose', function sluiceRelease(_instance, done) {
    for (const entry of made.splice(0)) entry.limiter.release();
    done();
  });
  const hookFor = (hookOptions: Record<string, unknown>) => {
    const entry = createRateLimitHook(binding, hookOptions);
    made.push(entry);
    return entry;
  };

  const globalHook = global ? hookFor(appOptions) : undefined;
  if (!global && !notFound) checkUnhookedOptions(binding, appOptions);
  if (notFound) {
    // Fastify gives its not-found handler no `onRoute`, only the context's own hooks, which
    // every route of the context runs too: routes go on here, they have their limit already.
    const { name, notFoundHandler } = globalHook ?? hookFor(appOptions);
    app.addHook(name as 'onRequest', notFoundHandler as onRequestHookHandler);
  }
  if (!app.hasRequestDecorator('rateLimit')) app.decorateRequest('rateLimit', undefined);
  if (!app.hasDecorator('rateLimiter')) {
    const handle: RateLimiterHandle = {
      limiter: globalHook?.limiter.limiter,
      limiterFor: globalHook?.limiter.limiterFor,
      route: (method, url, constraints) => routes.get(routeName(method.toUpperCase(), url, constraints)),
    };
    app.decorate('rateLimiter', handle);
  }
  // Fastify's automatic HEAD route of a GET reaches `onRoute` as a route of its own, with the
  // same `config`: it takes its GET route's own limit, so the two share a count. Other routes
  // that share a config object (a GET and a POST, say) each count apart, as ever.
  const getHooks = new Map<string, { own: unknown; hook: RateLimitHookEntry }>();
  const ownHookFor = (own: unknown, route: RouteOptions): RateLimitHookEntry => {
    const methods = [route.method].flat().map((method) => method.toUpperCase());
    const { constraints } = route;
    const getName = routeName('GET', route.url, constraints);
    // A prefixed plugin's root GET (`'/'` under `/api`) is made at `/api` and `/api/`, and only
    // the first reaches `onRoute`; the automatic HEAD of each does, the second's at `/api/`.
    const get =
      getHooks.get(getName) ??
      (route.url.endsWith('/') ? getHooks.get(routeName('GET', route.url.slice(0, -1), constraints)) : undefined);
    // The label names the route's namespace: two routes of one method and URL that Fastify
    // tells apart by their constraints (a host, a version) count apart, as they are two routes.
    const label = `config.rateLimit of ${routeName(methods.join(','), route.url, constraints)}`;
    const hook =
      get !== undefined && get.own === own && methods.length === 1 && methods[0] === 'HEAD'
        ? get.hook
        : inRoute(label, () => hookFor(mergeRouteOptions(appOptions, own, label)));
    if (methods.includes('GET')) getHooks.set(getName, { own, hook });
    // The HEAD of a GET made without `onRoute` names that GET's route too.
    const names = hook === get?.hook ? ['GET', ...methods] : methods;
    for (const method of names) routes.set(routeName(method, route.url, constraints), hook.limiter);
    return hook;
  };
  app.addHook('onRoute', function sluiceRoute(route) {
    const own = route.config?.rateLimit;
    if (own === false) return;
    // A route's own limit replaces the plugin-wide ones: only the innermost registration adds it.
    if (own !== undefined && (this as WithRegistration)[kRegistration] !== registration) return;
    const hook = own === undefined ? globalHook : ownHookFor(own, route);
    if (hook === undefined) return;
    const existing = route[hook.name] === undefined ? [] : [route[hook.name]].flat();
    (route as unknown as Record<string, unknown>)[hook.name] = [...existing, hook.handler];
  });
};

/**
 * With `global: false` (and no `notFound`) no hook is made of the plugin's options, so a bad one
 * (a typo, `limit: -1`, an option its store refuses) surfaced only as a route's, named after the
 * route, or never: they are checked at registration, as a hook of them would be, and the
 * limiter made for it is given up at once. Where they give no policy, over a stand-in limit;
 * where they give part of one (a window alone), they are refused, as every route would refuse
 * them or replace them whole. The check's limiter counts under a namespace of its own, so it
 * claims none another limiter of the store holds, and tells no logger: the routes' hooks give
 * their warnings.
 */
function checkUnhookedOptions(
  binding: Parameters<typeof createRateLimitHook>[0],
  appOptions: Record<string, unknown>,
): void {
  // No route takes the plugin's `prefix` (each counts under its own), and no hook of the plugin's is made.
  if (appOptions.prefix !== undefined) {
    throw new SluiceError(
      'ERR_SLUICE_CONFLICTING_OPTIONS',
      "[sluice] Option `prefix` names the plugin-wide limit's counts, which `global: false` does not make: no route takes it. Give a route that should share a count a `prefix` of its own options.",
    );
  }
  const givesPolicy = ['policies', 'rules', ...POLICY_OPTION_NAMES].some((name) => appOptions[name] !== undefined);
  const standIn = {
    ...appOptions,
    ...(givesPolicy ? {} : { limit: 1, window: 1_000 }),
    ...(appOptions.rules === undefined ? { prefix: CHECK_PREFIX } : {}),
    logger: SILENT,
  };
  limiterSettings(appOptions);
  createRateLimitHook(binding, standIn).limiter.release();
}

const CHECK_PREFIX = 'sluice-fastify-option-check';
const SILENT = { warn: () => {} };

/**
 * A route as Fastify tells it from others: its method, URL and constraints, each constraint by
 * name and value (a host constraint may be a RegExp, written as its source).
 */
function routeName(method: string, url: string, constraints: Record<string, unknown> | undefined): string {
  const names = constraints === undefined ? [] : Object.keys(constraints).sort();
  if (names.length === 0) return `${method} ${url}`;
  const terms = names.map((name) => `${name}=${String((constraints as Record<string, unknown>)[name])}`);
  return `${method} ${url} [${terms.join(' ')}]`;
}

/**
 * Fastify plugin: `await app.register(rateLimitPlugin, options)` limits every route registered
 * after it, in this context and its children; a route's `config.rateLimit` replaces the limit
 * for that route, and `false` turns it off. Registering it again inside a child context adds a
 * second limit there, and both report their headers.
 */
export const rateLimitPlugin = fp(plugin, { fastify: '5.x', name: '@sluice/fastify' });

export type { Decision, HeadersOptions, PolicyOptions, RateLimitHandle, RulesHttpOptions } from '@sluice/core';
export { ipKey } from '@sluice/core';
export type { OnLimited, RateLimitHook } from './rate-limit-hook.js';
