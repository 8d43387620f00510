import {
  type AdapterBinding,
  createHttpLimiter,
  type Decision,
  type HttpLimiterOptions,
  isThenable,
  lookupName,
  type Outcome,
  PROBLEM_CONTENT_TYPE,
  problemBody,
  type RateLimitHandle,
  type RulesHttpOptions,
  thrownError,
} from '@sluice/core';
import type { Context, default as Koa, Middleware, Next } from 'koa';
import { createClientIp } from './client-ip.js';

declare module 'koa' {
  interface DefaultState {
    /** The decision of the last sluice limiter that counted this request. */
    rateLimit?: Decision;
  }
}

export type RateLimitOptions = (HttpLimiterOptions<Context> | RulesHttpOptions<Context>) & {
  /**
   * Sets the response for a refused request instead of the default 429 problem document. The
   * status is already 429 (503 when the store could not decide); a body left unset gets the
   * default problem document under the status it has then.
   */
  onLimited?: ((ctx: Context, decision: Decision) => unknown) | undefined;
};

const unproxiedIp = createClientIp();

/**
 * How many of the chain's last entries Koa reads (`ips.slice(-maxIpsCount)` when above 0):
 * a count that slices from the start (0.5, `Infinity`, `NaN`) reads every entry, the client's
 * first; 1.5 reads one, and so does '1' (an environment variable's), which Koa's arithmetic
 * reads as a number.
 */
const proxyHops = ({ maxIpsCount }: Koa): number => {
  const count = Number(maxIpsCount);
  return count >= 1 && Number.isFinite(count) ? Math.trunc(count) : 0;
};

/**
 * Koa trusts `X-Forwarded-For` from any peer once `app.proxy` is on, and with the default
 * `maxIpsCount: 0` `ctx.ip` is its left-most entry, which the client writes. Only a bounded
 * `maxIpsCount` makes the address one the proxies vouch for.
 */
const sharedBinding: AdapterBinding<Context, Context> = {
  rawRequest: (ctx) => ctx.req,
  requestUrl: (ctx) => ctx.originalUrl,
  rawResponse: (ctx) => ctx.res,
  clientIp: (ctx, trust) => (trust === 'none' ? unproxiedIp(ctx) : ctx.ip),
  proxyTrust: (ctx) => (!ctx.app.proxy ? 'none' : proxyHops(ctx.app) > 0 ? 'some' : 'all'),
  // Koa reads X-Forwarded-For's last `maxIpsCount` entries and takes the first of them.
  trustsAsProxy: (ctx, _address, hop) => hop < proxyHops(ctx.app),
  // Koa reads the chain from `app.proxyIpHeader`, X-Forwarded-For unless the app names another.
  forwardingHeader: ({ app }) =>
    typeof app.proxyIpHeader === 'string' && app.proxyIpHeader !== '' ? app.proxyIpHeader : 'X-Forwarded-For',
  trustAdvice:
    'set `app.proxy = true` together with `app.maxIpsCount` = the number of proxies in front of the app, and make sure clients cannot reach the app except through them.',
  // koa-compose calls each middleware from `dispatch`.
  dispatchFrame: /\bat dispatch \([^)]*koa-compose/,
  setHeader: (ctx, name, value) => ctx.set(name, value),
  // A field nothing set yet is set on Node's response, sparing `ctx.append` its copy of every
  // header to read one; one an earlier limiter (sluice's or another's) set is appended to.
  appendHeader(ctx, name, value) {
    if (!ctx.headerSent && ctx.res.getHeader(lookupName(name)) === undefined) ctx.res.setHeader(name, value);
    else ctx.append(name, value);
  },
};

/**
 * The binding of one middleware: the route a request matched is found by the router layer that
 * holds that middleware.
 */
function bindingOf(middleware: Middleware): AdapterBinding<Context, Context> {
  const routeOf = (ctx: Context) => routeLayer(ctx, middleware);
  return {
    ...sharedBinding,
    routePattern(ctx) {
      const path = routeOf(ctx)?.path;
      // A route given as a RegExp has no pattern to report.
      return typeof path === 'string' ? path : undefined;
    },
    // @koa/router gives a GET route HEAD as well; a route of HEAD alone is the app's own.
    headRunsGet(ctx) {
      const methods = routeOf(ctx)?.methods;
      return Array.isArray(methods) && methods.includes('GET');
    },
  };
}

/** A layer of @koa/router (or koa-router), as `ctx.matched` lists them. */
interface RouterLayer {
  path?: unknown;
  methods?: unknown;
  stack?: unknown;
  paramNames?: unknown;
}

/** The router running, as @koa/router sets it on the context. */
interface RunningRouter {
  stack?: unknown;
  opts?: { exclusive?: unknown };
}

const isRoute = (layer: RouterLayer, method: string) => Array.isArray(layer?.methods) && layer.methods.includes(method);
const isUse = (layer: RouterLayer) => Array.isArray(layer?.methods) && layer.methods.length === 0;

/**
 * The layer of the route @koa/router (or koa-router) matched, so known after the router only.
 * Of the layers the router running (`ctx.router`) runs for the request (`ctx.matched` lists
 * every router's), in order, the one running this limiter is found (`runningLayer`). A route's
 * is that route. In a `router.use` layer, the first route after it answers, unless it passes
 * the request on; with none after it, a route before it, which passed the request on, answers
 * on the way back: one at the use layer's own path, else the first, a fallback around the rest.
 */
function routeLayer(ctx: Context, middleware: Middleware): RouterLayer | undefined {
  const current: unknown = ctx._matchedRoute;
  const matched: unknown = ctx.matched;
  if (current === undefined || !Array.isArray(matched)) return undefined;
  const router = ctx.router as RunningRouter | undefined;
  const own = router?.stack;
  const runs = (matched as RouterLayer[]).filter(
    (layer) => (isUse(layer) || isRoute(layer, ctx.method)) && (!Array.isArray(own) || own.includes(layer)),
  );
  const at = runningLayer(runs, router?.opts?.exclusive, current, middleware);
  const running = runs[at];
  if (running === undefined || !isUse(running)) return running;
  const isMethodRoute = (layer: RouterLayer) => isRoute(layer, ctx.method);
  const before = runs.slice(0, at).filter(isMethodRoute);
  return runs.slice(at + 1).find(isMethodRoute) ?? before.find((layer) => layer.path === running.path) ?? before[0];
}

/**
 * Which of the layers the router runs (`runs`) runs this limiter. An exclusive router runs one:
 * the last (`exclusive: true`), or the one of fewest parameters (`'specificity'`). Otherwise the
 * layers run in turn, and a limiter meets a request once: where the first layer at the running
 * path (`ctx._matchedRoute`) holding it is a `router.use` layer, that one runs it; otherwise
 * the first route at that path does (a limiter wrapped in another function is in no layer).
 */
function runningLayer(runs: RouterLayer[], exclusive: unknown, current: unknown, middleware: Middleware): number {
  if (exclusive === 'specificity') {
    const params = (layer: RouterLayer) => (Array.isArray(layer.paramNames) ? layer.paramNames.length : 0);
    return runs.reduce((best, layer, i) => (params(layer) < params(runs[best] as RouterLayer) ? i : best), 0);
  }
  if (exclusive) return runs.length - 1;
  const here = (layer: RouterLayer) => layer.path === current;
  const holding = runs.findIndex(
    (layer) => here(layer) && Array.isArray(layer.stack) && layer.stack.includes(middleware),
  );
  if (holding !== -1 && isUse(runs[holding] as RouterLayer)) return holding;
  // On a route: the first route at that path, which runs first. Two routes at one path differ
  // only in method (a HEAD route beside a GET one): of those, the first runs the limiter,
  // held or wrapped, unless it passes the request on.
  const route = runs.findIndex((layer) => here(layer) && !isUse(layer));
  return route !== -1 ? route : runs.findIndex(here);
}

/**
 * Koa middleware: `app.use(rateLimit(options))`, or per route with a router. Each call has its
 * own limiter and, unless `store` is given, its own memory store. It carries the limiter
 * (`.limiter`, `.limiterFor(policies)`) for application code to peek, reset or refund a
 * client's quota. Store errors under `onStoreError: 'throw'` propagate to Koa's error handling.
 *
 * @example
 * app.use(rateLimit({ limit: 100, window: '1m' }));
 */
export function rateLimit(options: RateLimitOptions): Middleware & RateLimitHandle {
  const limiter = createHttpLimiter(options, bindingOf(sluiceRateLimit));
  const { onLimited } = options;
  const apply = (ctx: Context, next: Next, outcome: Outcome): unknown => {
    if (outcome.decision !== undefined) ctx.state.rateLimit = outcome.decision;
    if (outcome.action === 'next') return next();
    if (outcome.action === 'gone') {
      ctx.respond = false;
      return undefined;
    }
    if (outcome.refusal === undefined) return limitedBy(onLimited, ctx, outcome.decision, outcome.status);
    const { status, contentType, body } = outcome.refusal;
    ctx.status = status;
    // Set as is: `ctx.type` would look the type up in the MIME database on every refusal.
    ctx.set('Content-Type', contentType);
    ctx.body = body;
    return undefined;
  };
  // Not an async function: when the outcome is ready at once (an in-process store, with no
  // async key, cost, skip or tier function), the middleware hands Koa `next()`'s own promise
  // instead of wrapping it in another.
  function sluiceRateLimit(ctx: Context, next: Next): unknown {
    let outcome: Outcome | Promise<Outcome>;
    try {
      outcome = limiter.handle(ctx, ctx);
    } catch (error) {
      throw thrownError(error);
    }
    return outcome instanceof Promise
      ? outcome.then((settled) => apply(ctx, next, settled), rethrown)
      : apply(ctx, next, outcome);
  }
  return Object.assign(sluiceRateLimit, { limiter: limiter.limiter, limiterFor: limiter.limiterFor });
}

/**
 * A refusal answered by `onLimited`. Koa answers a response nobody set with 404, so the status
 * is set first, and a body `onLimited` leaves unset (or sets to `null`) is the default problem
 * document: a refused request is never reported as missing, nor, with a body alone, as a success.
 */
function limitedBy(
  onLimited: RateLimitOptions['onLimited'],
  ctx: Context,
  decision: Decision,
  status: number,
): unknown {
  ctx.status = status;
  let answered: unknown;
  try {
    answered = onLimited?.(ctx, decision);
  } catch (error) {
    throw thrownError(error);
  }
  return isThenable(answered)
    ? Promise.resolve(answered).then(() => problemUnlessAnswered(ctx, decision, status), rethrown)
    : problemUnlessAnswered(ctx, decision, status);
}

/** Koa leaves a request whose middleware rejected with no error unanswered: it fails with one. */
const rethrown = (reason: unknown): never => {
  throw thrownError(reason);
};

function problemUnlessAnswered(ctx: Context, decision: Decision, status: number): void {
  if (ctx.body !== undefined && ctx.body !== null) return;
  if (ctx.respond === false || ctx.res.headersSent) return;
  // Koa turns a null body into 204 No Content: a refusal keeps its own status.
  if (ctx.status === 204) ctx.status = status;
  ctx.set('Content-Type', PROBLEM_CONTENT_TYPE);
  ctx.body = problemBody(decision, ctx.status);
}

export type { Decision, HeadersOptions, PolicyOptions, RateLimitHandle, RulesHttpOptions } from '@sluice/core';
export { ipKey } from '@sluice/core';
