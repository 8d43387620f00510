import type { IncomingMessage, ServerResponse } from 'node:http';
import { SluiceError } from '../errors.js';
import type { Decision, Limiter, PolicyOptions } from '../types.js';
import type { ClientAddressSource } from './client-address.js';
import type { HeaderTarget } from './headers/index.js';
import type { Refusal } from './refusal.js';

/** What an adapter tells the shared core about its framework. Created once per adapter. */
export interface AdapterBinding<Req, Res> extends HeaderTarget<Res>, ClientAddressSource<Req> {
  /** Node's request behind the framework's. */
  rawRequest(req: Req): IncomingMessage;
  /**
   * The request's URL as the client sent it: Express rewrites Node's `url` while a mounted
   * router or sub-app handles the request (`/login` under `app.use('/api', …)`), which made a
   * rule on `/api/login` match nothing there.
   */
  requestUrl(req: Req): string | undefined;
  /** Node's response behind the framework's. */
  rawResponse(res: Res): ServerResponse;
  /** The route pattern the framework matched (`/users/:id`), for rules' `route` descriptor. */
  routePattern?(req: Req): string | undefined;
  /**
   * Whether the route a HEAD request matched is a GET route, whose handler answers it (Express,
   * `@koa/router` and Fastify answer HEAD so unless the app routes HEAD itself): its `route`
   * descriptor is then the GET's, so that HEAD is no way around a GET route's rule.
   */
  headRunsGet?(req: Req): boolean;
  /** A stack frame of the framework dispatching a request: a limiter created under one warns. */
  dispatchFrame?: RegExp;
  /** The framework sets each request's prototype (Express): see `createFirstVisit`. */
  swapsRequestPrototype?: boolean;
}

/**
 * - `next`: go on (`decision` is undefined when `skip` or `allowList` matched or this limiter
 *   already counted the request);
 * - `limited`: refused (over the quota, or banned: `decision.reason === 'banned'`); headers and
 *   `Retry-After` are set, the adapter sends `refusal`, or calls the user's `onLimited` (then
 *   `refusal` is undefined) on a response given `status`: 429, 503 when the store could not
 *   decide, or a ban's;
 * - `gone`: the client left while its queued request was held; send nothing.
 */
export type Outcome =
  | { readonly action: 'next'; readonly decision: Decision | undefined }
  | { readonly action: 'limited'; readonly decision: Decision; readonly refusal: Refusal }
  | { readonly action: 'limited'; readonly decision: Decision; readonly refusal: undefined; readonly status: number }
  | { readonly action: 'gone'; readonly decision: Decision };

/** The outcome of a request passed on undecided: skipped, or already counted. */
export const SKIPPED: Outcome = Object.freeze({ action: 'next', decision: undefined });

/** What a middleware carries besides itself: the limiter it counts in, for application code. */
export interface RateLimitHandle {
  /** The limiter behind the middleware (same store and namespace); undefined when `policies` or `limit` is a function. */
  readonly limiter: Limiter | undefined;
  /** The limiter of one tier of a `policies` (or `limit`) function: the one its requests count in. */
  limiterFor(policies: readonly PolicyOptions[]): Limiter;
}

/** The handle of a middleware without one limiter of its own (rules mode: one per rule). */
export const NO_LIMITER_HANDLE: RateLimitHandle = Object.freeze({
  limiter: undefined,
  limiterFor(): never {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_POLICIES',
      '[sluice] `limiterFor` is for a middleware whose `policies` or `limit` is a function; this one has fixed policies or rules.',
    );
  },
});

export interface HttpLimiter<Req, Res> extends RateLimitHandle {
  /**
   * An outcome at once when nothing needs waiting for (an in-process store, no async `key`,
   * `cost`, `skip` or tier function, no queue hold), else a promise of one. Adapters take
   * both, so the common case costs no promise.
   */
  handle(req: Req, res: Res): Outcome | Promise<Outcome>;
  /**
   * Gives up the namespaces its limiters claimed, for an app that closes: an app built again
   * in the process (a test's next app over one Redis client) takes them anew. It must not
   * handle requests after.
   */
  release(): void;
}
