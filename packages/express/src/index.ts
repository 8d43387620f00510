import {
  type AdapterBinding,
  checkedLogger,
  createHttpLimiter,
  createWarnOnce,
  type Decision,
  type HttpLimiterOptions,
  lookupName,
  type Outcome,
  type RateLimitHandle,
  type RulesHttpOptions,
  thrownError,
  type WarnOnce,
} from '@sluice/core';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { setRateLimit } from './decision-property.js';
import { expressProxyTrust, expressTrustsAsProxy } from './proxy-trust.js';
import { expressHeadRunsGet, expressRoutePattern } from './route-pattern.js';

declare global {
  namespace Express {
    interface Request {
      /** The decision of the last sluice limiter that counted this request. */
      rateLimit?: Decision | undefined;
    }
  }
}

export type RateLimitOptions = (HttpLimiterOptions<Request, Response> | RulesHttpOptions<Request>) & {
  /** Sends the response for a refused request instead of the default 429 problem document. */
  onLimited?: ((req: Request, res: Response, next: NextFunction, decision: Decision) => unknown) | undefined;
};

const isThenable = (value: unknown): value is PromiseLike<unknown> =>
  typeof (value as PromiseLike<unknown> | undefined)?.then === 'function';

const binding: AdapterBinding<Request, Response> = {
  rawRequest: (req) => req,
  requestUrl: (req) => req.originalUrl,
  rawResponse: (res) => res,
  proxyTrust: (req) => expressProxyTrust(req.app),
  // Trusting no proxy (`false` or 0), Express's `req.ip` is the socket's address, which it
  // finds only after parsing X-Forwarded-For on every request. The setting is `proxyTrust`'s
  // reading: a second `req.app.get` cost some 1,200 instructions a request, most of them in
  // V8's runtime.
  clientIp: (req, trust) => (trust === 'none' ? req.socket.remoteAddress : req.ip),
  trustAdvice:
    "set Express's `trust proxy` to the number of proxies in front of the app or to their addresses, never to `true`.",
  trustsAsProxy: (req, address, hop) => expressTrustsAsProxy(req.app, address, hop),
  // `app.handle` sets the prototype of every request to the app's `request`.
  swapsRequestPrototype: true,
  // Express 5's router and Express 4's call a handler from these.
  dispatchFrame: /\bat Layer\.handle(?:Request\b| \[as handle_request\])/,
  // Known once Express has routed: in a route's own middleware, not in `app.use`.
  routePattern: expressRoutePattern,
  headRunsGet: (req) => expressHeadRunsGet(req.route),
  setHeader: (res, name, value) => res.setHeader(name, value),
  // A field nothing set yet is set, which Node validates once where its append validates
  // twice; one an earlier limiter (sluice's or another's) set is appended to, never replaced,
  // into a new list: Node's `appendHeader` pushes into the array the app set, which may be one
  // it keeps (a constant), growing by an item each response.
  appendHeader: (res, name, value) => {
    const set = res.getHeader(lookupName(name));
    if (set === undefined) res.setHeader(name, value);
    else res.setHeader(name, Array.isArray(set) ? [...set, value] : [String(set), value]);
  },
};

/**
 * Express middleware: `app.use(rateLimit(options))`, or per route
 * `app.post('/login', rateLimit(options), handler)`. Each call has its own limiter and, unless
 * `store` is given, its own memory store. The middleware
 * carries that limiter (`.limiter`, `.limiterFor(policies)`) so application code can peek,
 * reset or refund a client's quota.
 *
 * @example
 * app.use(rateLimit({ limit: 100, window: '1m' }));
 */
export function rateLimit(options: RateLimitOptions): RequestHandler & RateLimitHandle {
  const limiter = createHttpLimiter(options, binding);
  const { onLimited } = options;
  const warn = createWarnOnce(checkedLogger(options.logger));

  const apply = (outcome: Outcome, req: Request, res: Response, next: NextFunction): void => {
    if (outcome.decision !== undefined && !setRateLimit(req, outcome.decision)) notStored(warn);
    if (outcome.action === 'next') next();
    else if (outcome.action === 'limited') {
      if (outcome.refusal === undefined) limitedBy(onLimited, outcome, req, res, next);
      else {
        const { status, contentType, body } = outcome.refusal;
        // Named here: Node measures a body it sends, not one a HEAD answer leaves out.
        res.status(status).setHeader('Content-Type', contentType).setHeader('Content-Length', Buffer.byteLength(body));
        res.end(body);
      }
    }
  };

  /** `apply` once a promised outcome lands: what it throws goes to `next`, as a rejection does. */
  const applyOrPass = (outcome: Outcome, req: Request, res: Response, next: NextFunction): void => {
    try {
      apply(outcome, req, res, next);
    } catch (error) {
      next(thrownError(error));
    }
  };

  const sluiceRateLimit: RequestHandler = function sluiceRateLimit(req, res, next) {
    // Store errors (`onStoreError: 'throw'`) go to `next`: Express 4 ignores a rejected promise.
    try {
      const outcome = limiter.handle(req, res);
      if (outcome instanceof Promise)
        outcome.then(
          (settled) => applyOrPass(settled, req, res, next),
          (reason: unknown) => next(thrownError(reason)),
        );
      else apply(outcome, req, res, next);
    } catch (error) {
      next(thrownError(error));
    }
  };
  return Object.assign(sluiceRateLimit, { limiter: limiter.limiter, limiterFor: limiter.limiterFor });
}

/** The request holds a `rateLimit` of its own that no decision can replace. */
const notStored = (warn: WarnOnce): void =>
  warn(
    'WRN_SLUICE_DECISION_NOT_STORED',
    'a request holds a `rateLimit` defined read-only and not configurable, or with a setter that refused it (or the request is frozen), so the decision could not be put on `req.rateLimit`; the request is limited all the same. Define your own `rateLimit` configurable, or not at all.',
  );

/**
 * A refusal answered by `onLimited`. As in Koa and Fastify, the response has the refusal's
 * status (429, 503 when the store could not decide, or a ban's) before it runs, so a body it
 * sends without one (`res.json(…)`) is not a 200 OK. Going on (`next`) gives the request back
 * the status it had: a request let through, or an error (thrown, or an async handler's
 * rejection, which dropped would leave the client waiting) for the app's error handling.
 */
function limitedBy(
  onLimited: RateLimitOptions['onLimited'],
  { decision, status }: Extract<Outcome, { refusal: undefined }>,
  req: Request,
  res: Response,
  next: NextFunction,
): void {
  const { statusCode } = res;
  res.status(status);
  const goOn: NextFunction = (error?: unknown) => {
    res.status(statusCode);
    next(error);
  };
  let handled: unknown;
  try {
    handled = onLimited?.(req, res, goOn, decision);
  } catch (error) {
    goOn(thrownError(error));
    return;
  }
  if (isThenable(handled)) handled.then(undefined, (reason: unknown) => goOn(thrownError(reason)));
}

export type { Decision, HeadersOptions, PolicyOptions, RateLimitHandle, RulesHttpOptions } from '@sluice/core';
export { ipKey } from '@sluice/core';
