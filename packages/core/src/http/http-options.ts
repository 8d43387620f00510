import { invalid, SluiceError } from '../errors.js';
import {
  checkKnownOptions,
  HTTP_ONLY_OPTIONS,
  LIMITER_OPTION_NAMES,
  POLICY_OPTION_NAMES,
  unsetOptions,
} from '../known-options.js';
import type { LimiterBaseOptions, PolicyOptions } from '../types.js';
import type { AllowList } from './allow-list.js';
import type { BanOptions } from './ban.js';
import { checkIpv6Subnet } from './client-key.js';
import type { CountByOutcomeOptions } from './count-by-outcome.js';
import { checkQueueBounded } from './futile-options.js';
import { checkHeaders, type HeadersOptions, type ResolvedHeaders } from './headers/index.js';
import { limitFunctionPolicies } from './limit-function.js';
import type { NotificationOptions } from './notifications.js';
import type { RefusalOptions } from './refusal.js';

type Awaitable<T> = T | Promise<T>;

/** Per-tier quotas: the policies for this request and client key, e.g. by the caller's plan. */
export type PoliciesFor<Req> = (req: Req, key: string) => Awaitable<readonly PolicyOptions[]>;

/** A limit per request and client key, with the other policy options fixed. */
export type LimitFor<Req> = (req: Req, key: string) => Awaitable<number>;

export interface HttpOptionsBase<Req, Res = Req>
  extends LimiterBaseOptions,
    RefusalOptions<Req>,
    CountByOutcomeOptions<Req, Res>,
    NotificationOptions<Req> {
  /**
   * The client key, e.g. a user or API key id after auth; a whole number (a numeric user id) is
   * taken as its decimal string. @default the client IP (see `ipv6Subnet`)
   */
  key?: ((req: Req) => Awaitable<string | number>) | undefined;
  /** Quota units this request spends. @default 1 */
  cost?: number | ((req: Req) => Awaitable<number>) | undefined;
  /** Requests for which this returns true are neither counted nor limited. */
  skip?: ((req: Req) => Awaitable<boolean>) | undefined;
  /** Clients neither counted nor limited: their keys, or a function of the request and key. */
  allowList?: AllowList<Req> | undefined;
  /**
   * Refuse a client outright for a while after too many refusals. `false`: none, as leaving it
   * out is, which a route's own limit gives to turn off the app's.
   */
  ban?: BanOptions | false | undefined;
  /** @default { standard: 'draft-11', legacy: false } */
  headers?: HeadersOptions | undefined;
  /** Prefix length IPv6 clients are keyed by, or `false` for the whole address. @default 56 */
  ipv6Subnet?: number | false | undefined;
  /**
   * Queue mode: most requests this middleware holds at once, over every client. Beyond it a
   * request is refused (429, its charge given back) instead of held. @default 1024
   */
  maxQueued?: number | undefined;
}

type PolicyFields = (typeof POLICY_OPTION_NAMES)[number];

/** The options every adapter takes: the limiter's, and what HTTP adds (SPEC §5). */
export type HttpLimiterOptions<Req, Res = Req> = HttpOptionsBase<Req, Res> &
  (
    | (Omit<PolicyOptions, 'limit'> & { limit: number | LimitFor<Req>; policies?: undefined })
    | ({ policies: readonly PolicyOptions[] | PoliciesFor<Req> } & { [K in PolicyFields]?: undefined })
  );

/** Requests one middleware holds at once in queue mode, unless `maxQueued` says otherwise. */
export const DEFAULT_MAX_QUEUED = 1024;

/** The `maxQueued` option, or its default. */
export function checkMaxQueued(value: unknown): number {
  const maxQueued = value === undefined ? DEFAULT_MAX_QUEUED : value;
  if (typeof maxQueued !== 'number' || !Number.isSafeInteger(maxQueued) || maxQueued <= 0) {
    invalid('ERR_SLUICE_INVALID_QUEUE', 'maxQueued', maxQueued, 'a positive whole number of requests');
  }
  return maxQueued;
}

/** Every option name an adapter accepts, for the unknown-option check and its suggestions. */
export const HTTP_OPTION_NAMES: readonly string[] = [...LIMITER_OPTION_NAMES, ...HTTP_ONLY_OPTIONS];

/** Options only rules mode takes. */
const RULES_ONLY_OPTIONS = ['rules', 'domain', 'descriptors', 'fields'];

export interface CheckedHttpOptions<Req> {
  key: ((req: Req) => Awaitable<string | number>) | undefined;
  cost: number | ((req: Req) => Awaitable<number>);
  skip: ((req: Req) => Awaitable<boolean>) | undefined;
  headers: ResolvedHeaders;
  ipv6Subnet: number | false;
  maxQueued: number;
  policiesFor: PoliciesFor<Req> | undefined;
  /** Whether `policiesFor` comes from a `limit` function: its tiers are one policy, counted once. */
  limitVaries: boolean;
  /** What is left for `createLimiter`, which validates it. */
  limiterOptions: Record<string, unknown>;
}

/**
 * `app.use(rateLimit)`, the factory mounted without being called, is handed the framework's
 * request (Express's `req`, Koa's `ctx`) as its options on every request. No valid options
 * object has a `method`.
 */
function isFrameworkRequest(options: object): boolean {
  const { method, headers } = options as { method?: unknown; headers?: unknown };
  return typeof method === 'string' && typeof headers === 'object' && headers !== null;
}

/** Request functions must be functions: a value there would otherwise fail on every request. */
export function checkHandlers(options: Record<string, unknown>, names: readonly string[]): void {
  for (const name of names) {
    if (options[name] !== undefined && typeof options[name] !== 'function') {
      invalid('ERR_SLUICE_INVALID_HANDLER', name, options[name], 'a function of the request');
    }
  }
}

/** `cost`: a positive whole number, or a function of the request returning one. @default 1 */
export function checkCost(value: unknown): unknown {
  const cost = value === undefined ? 1 : value;
  if (typeof cost !== 'function' && (typeof cost !== 'number' || !Number.isSafeInteger(cost) || cost <= 0)) {
    invalid(
      'ERR_SLUICE_INVALID_COST',
      'cost',
      cost,
      'a positive whole number, or a function of the request returning one',
    );
  }
  return cost;
}

/** Validates what HTTP adds to the limiter options; the limiter options are left to `createLimiter`. */
export function checkHttpOptions<Req>(options: unknown, extraNames: readonly string[]): CheckedHttpOptions<Req> {
  if (typeof options !== 'object' || options === null)
    invalid('ERR_SLUICE_INVALID_OPTION', 'options', options, 'an object');
  if (isFrameworkRequest(options)) {
    throw new SluiceError(
      'ERR_SLUICE_NOT_CALLED',
      "[sluice] `rateLimit` was given a request instead of options: it was mounted without being called. Mount the middleware it returns: `app.use(rateLimit({ limit: 100, window: '1m' }))`.",
    );
  }
  // Rules mode's own options left undefined (`rules: config.rules`, unset) are no mistake: they
  // are the options of the mode not chosen.
  checkKnownOptions(options, [...HTTP_OPTION_NAMES, ...unsetOptions(options, RULES_ONLY_OPTIONS), ...extraNames]);
  const all = options as Record<string, unknown>;
  checkHandlers(all, ['key', 'skip', 'onLimited']);
  const cost = checkCost(all.cost);
  if (all.key !== undefined && all.ipv6Subnet !== undefined) {
    throw new SluiceError(
      'ERR_SLUICE_CONFLICTING_OPTIONS',
      '[sluice] Options `key` and `ipv6Subnet` exclude each other: `ipv6Subnet` shapes the default IP key only. Use `ipKey(ip, subnet)` inside `key`.',
    );
  }
  const maxQueued = checkMaxQueued(all.maxQueued);
  checkQueueBounded(all);
  // A `limit` function varies the one policy the other top-level options make: a `policies`
  // list beside it would be dropped.
  if (typeof all.limit === 'function' && all.policies !== undefined && typeof all.policies !== 'function') {
    throw new SluiceError(
      'ERR_SLUICE_CONFLICTING_OPTIONS',
      '[sluice] Option `limit` as a function cannot be combined with `policies`; for several policies per request, give `policies` as a function of the request and key.',
    );
  }
  const policiesFor =
    typeof all.policies === 'function'
      ? (all.policies as PoliciesFor<Req>)
      : typeof all.limit === 'function'
        ? limitFunctionPolicies<Req>(all)
        : undefined;
  const stray = POLICY_OPTION_NAMES.find((name) => all[name] !== undefined);
  if (typeof all.policies === 'function' && stray !== undefined) {
    throw new SluiceError(
      'ERR_SLUICE_CONFLICTING_OPTIONS',
      `[sluice] Option \`${stray}\` cannot be given with \`policies\`; put it in the policies the function returns.`,
    );
  }
  const excluded = new Set<string>([...HTTP_ONLY_OPTIONS, ...RULES_ONLY_OPTIONS, ...extraNames]);
  if (policiesFor !== undefined) for (const name of [...POLICY_OPTION_NAMES, 'policies']) excluded.add(name);
  const limiterOptions: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(all)) if (!excluded.has(name)) limiterOptions[name] = value;
  return {
    key: all.key as CheckedHttpOptions<Req>['key'],
    cost: cost as CheckedHttpOptions<Req>['cost'],
    skip: all.skip as CheckedHttpOptions<Req>['skip'],
    headers: checkHeaders(all.headers),
    ipv6Subnet: checkIpv6Subnet(all.ipv6Subnet),
    maxQueued,
    policiesFor,
    limitVaries: typeof all.policies !== 'function' && typeof all.limit === 'function',
    limiterOptions,
  };
}
