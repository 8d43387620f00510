import { shortHash } from '../derived-namespace.js';
import { invalid, isSluiceError, SluiceError } from '../errors.js';
import { givenOptions, POLICY_OPTION_NAMES, refuseInherited } from '../known-options.js';
import type { PolicyOptions } from '../types.js';
import { hasQueue } from './futile-options.js';
import { HTTP_OPTION_NAMES, type HttpOptionsBase, type LimitFor, type PoliciesFor } from './http-options.js';
import { RULES_MODE_LACKS } from './rules/rules-options.js';

/** Per-route options: any option, each falling back to the one set for the whole app. */
export type HttpRouteOptions<Req, Res = Req> = HttpOptionsBase<Req, Res> &
  (
    | (Partial<Omit<PolicyOptions, 'limit'>> & { limit?: number | LimitFor<Req> | undefined; policies?: undefined })
    | { policies: readonly PolicyOptions[] | PoliciesFor<Req>; limit?: undefined; window?: undefined }
  );

/** The options naming what rules mode limits by: a route's `rules` replaces them all. */
const RULES_GROUP = ['rules', 'domain', 'descriptors', 'fields'];

/** The options counting a request by its outcome: one choice, a route's replacing the app's. */
const COUNT_BY_OUTCOME = ['skipFailedRequests', 'skipSuccessfulRequests', 'requestWasSuccessful'];

/**
 * The options of a route's own limiter: the route's, over the app-wide ones. Options that
 * only make sense together are replaced as a group, never mixed: a route that sets any policy
 * option sets all of them (an app-wide `algorithm` does not leak into a route's `policies`),
 * a route's `key` drops the app-wide `ipv6Subnet` (and the reverse), its `onLimited` the
 * app-wide `message` and `statusCode` (and the reverse), and any of `skipFailedRequests`,
 * `skipSuccessfulRequests` and `requestWasSuccessful` the app-wide three. A route's `headers` falls back field by
 * field (`standard`, `legacy`) to the app-wide one. Rules and policies replace each other: a
 * route's policy options drop the app-wide `rules`, `domain`, `descriptors` and `fields`, and its
 * `rules` the app-wide policy options, `key`, `throttle` and the options rules mode does not take, while a route's `domain` alone keeps
 * the app's rules. The app-wide `prefix` is never inherited: the route's limiter needs its own
 * namespace, so without a `prefix` of its own it gets one from `option`, which names the route,
 * the same in every process; under rules, which count per rule and descriptor, it gets none.
 */
export function mergeRouteOptions(
  appOptions: Record<string, unknown>,
  routeOptions: unknown,
  option: string,
): Record<string, unknown> {
  if (typeof routeOptions !== 'object' || routeOptions === null || Array.isArray(routeOptions)) {
    invalid('ERR_SLUICE_INVALID_OPTION', option, routeOptions, 'an object of rate-limit options, or false');
  }
  // An option read through the prototype would be dropped by the copy below, unseen.
  refuseInherited(routeOptions, [...HTTP_OPTION_NAMES, ...RULES_GROUP], (name) => name);
  // `undefined` means left out, as at the app's level: a route's `{ key: undefined }` (a spread
  // of optional settings) dropped the app's `key` and keyed by IP.
  const own = givenOptions(routeOptions);
  const merged: Record<string, unknown> = { ...appOptions };
  delete merged.prefix;
  if (own.rules !== undefined || 'policies' in own || POLICY_OPTION_NAMES.some((name) => name in own)) {
    for (const name of [...POLICY_OPTION_NAMES, 'policies', ...RULES_GROUP]) delete merged[name];
  }
  // A route's own rules take none of the options rules mode refuses: the app's `key`,
  // `throttle`, `ban`, `allowList`, counting by outcome and callbacks stay with its policies.
  if (own.rules !== undefined) for (const name of ['key', 'throttle', ...RULES_MODE_LACKS]) delete merged[name];
  if ('onLimited' in own) for (const name of ['message', 'statusCode']) delete merged[name];
  if ('message' in own || 'statusCode' in own) delete merged.onLimited;
  if ('key' in own) delete merged.ipv6Subnet;
  if ('ipv6Subnet' in own) delete merged.key;
  // The app's `skipSuccessfulRequests` beside a route's `skipFailedRequests` would count nothing.
  if (COUNT_BY_OUTCOME.some((name) => name in own)) for (const name of COUNT_BY_OUTCOME) delete merged[name];
  // Under rules a limiter counts per rule and descriptor, as the app-wide one does: no prefix.
  if ((own.rules ?? merged.rules) === undefined) merged.prefix = `route.${shortHash(option, 16)}`;
  Object.assign(merged, own);
  // The fields' options fall back one by one: a route that asks for `legacy` keeps the app's draft.
  if (isPlainObject(appOptions.headers) && isPlainObject(own.headers))
    merged.headers = { ...appOptions.headers, ...own.headers };
  // The app's `maxQueued` bounds its queue: a route whose own policies queue nothing has none.
  if (!('maxQueued' in own) && hasQueue(merged) === false) delete merged.maxQueued;
  return merged;
}

/**
 * Runs `create` for the route `label` names, so that a configuration error says which route's
 * options it is about; the code stays the same.
 */
export function inRoute<T>(label: string, create: () => T): T {
  try {
    return create();
  } catch (error) {
    if (!isSluiceError(error)) throw error;
    const message = error.message.replace(/^\[sluice\] /, `[sluice] ${label}: `);
    throw new SluiceError(error.code, message, { cause: error });
  }
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
