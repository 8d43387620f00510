import type { RateLimitHandle } from '@sluice/core';

/** Adapter options as the suite writes them; request functions get the framework's own request. */
export type SuiteOptions = Record<string, unknown>;

export interface AppSpec {
  /** App-wide limiters, applied in this order. */
  limits?: SuiteOptions[];
  /** A further limiter on one GET route, on top of the app-wide ones (the framework's own way). */
  routeLimits?: Record<string, SuiteOptions>;
  /**
   * Each app-wide limiter is mounted twice on the way to every route, the framework's way
   * (Express: on the app and on a router; Koa: `app.use` twice). Fastify registers a plugin's
   * hook once per route, so it has no such mistake to make and ignores this.
   */
  mountTwice?: boolean;
  /** The framework's trust-proxy setting: none, the loopback proxy in front of the tests, or every proxy. */
  trust?: 'none' | 'loopback' | 'all';
}

export interface RunningApp {
  url: string;
  /** The handle (`.limiter`) of the first app-wide limit. */
  handle?: RateLimitHandle;
  /** Requests that reached a route handler. */
  hits(): number;
  /** Errors that reached the framework's error handling, which answered each with a 500. */
  errors(): unknown[];
  close(): Promise<void>;
}

/**
 * One framework behind the conformance suite. Every app serves `GET /`, `GET /other` and each
 * `routeLimits` path, answering `{ decision }` from the framework's decision property with the
 * status the request's `x-status` header asks for (200 without it); `GET /hang` never answers.
 */
export interface Harness {
  name: 'express' | 'koa' | 'fastify';
  start(spec: AppSpec): Promise<RunningApp>;
  /** Reads a request header inside `key`, `cost`, `skip` or `policies`. */
  header(req: unknown, name: string): string | undefined;
  /** An `onLimited` answering 418 `{ custom: true, violated }` the framework's way. */
  teapot(): unknown;
  /** Creates the middleware or registers the plugin; rejects with the configuration error. */
  configure(options: SuiteOptions): Promise<void>;
}
