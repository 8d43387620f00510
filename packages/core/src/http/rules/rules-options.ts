import { invalid } from '../../errors.js';
import type { LimiterBaseOptions } from '../../types.js';
import type { HeadersOptions } from '../headers/index.js';
import type { DescriptorField } from './request-descriptors.js';
import type { RuleSetLike, RulesOption } from './rule-like.js';

type Awaitable<T> = T | Promise<T>;

/**
 * An adapter's options with `rules` in place of `policies` (SPEC §7): the limits come from
 * the rule set in force, the client keys from the request's descriptors.
 */
export interface RulesHttpOptions<Req> extends Omit<LimiterBaseOptions, 'prefix' | 'throttle'> {
  /** A rule set (`parseRules`, `loadRules`) or a watcher (`watchRules`) from `@sluice/rules`. */
  rules: RulesOption;
  /** The rules' domain to match in. @default the only domain of the rules */
  domain?: string | undefined;
  /**
   * The descriptors each request sends, one list of keys per descriptor. Built-in keys:
   * `remote_address`, `method`, `route`, `path`, `header.<name>`; others come from `fields`.
   * @default [['remote_address'], ['route', 'remote_address'], ['user'], ['tier', 'user']]
   */
  descriptors?: readonly (readonly string[])[] | undefined;
  /** Descriptor values taken from the request, e.g. `{ user: (req) => req.user?.id }`. */
  fields?: Record<string, DescriptorField<Req>> | undefined;
  /** Quota units this request spends in every matched rule. @default 1 */
  cost?: number | ((req: Req) => Awaitable<number>) | undefined;
  skip?: ((req: Req) => Awaitable<boolean>) | undefined;
  /** Requests this middleware holds at once in queue mode; beyond it a request is refused. @default 1024 */
  maxQueued?: number | undefined;
  headers?: HeadersOptions | undefined;
  /** Prefix length IPv6 clients are keyed by in `remote_address`, or `false`. @default 56 */
  ipv6Subnet?: number | false | undefined;
}

/** True when the options ask for rules mode. */
export const isRulesMode = <Req>(options: object): options is RulesHttpOptions<Req> =>
  (options as { rules?: unknown }).rules !== undefined;

/** HTTP options a limiter of policies takes and rules mode does not: named as such, not as unknown. */
export const RULES_MODE_LACKS = [
  'ban',
  'allowList',
  'skipFailedRequests',
  'skipSuccessfulRequests',
  'requestWasSuccessful',
  'onExceeding',
  'onExceeded',
];

/** What an adapter takes in rules mode, besides `rules` (SPEC §7). */
export const RULES_OPTION_NAMES: readonly string[] = [
  'rules',
  'domain',
  'descriptors',
  'fields',
  'cost',
  'skip',
  'headers',
  'ipv6Subnet',
  'onLimited',
  'maxQueued',
  'message',
  'statusCode',
  'store',
  'clock',
  'onStoreError',
  'storeTimeoutMs',
  'logger',
];

/** A set's shape: an object with `match` and a list of domains (a string has a `match` too). */
export const isRuleSet = (value: unknown): value is RuleSetLike =>
  typeof value === 'object' &&
  value !== null &&
  typeof (value as RuleSetLike).match === 'function' &&
  Array.isArray((value as RuleSetLike).domains);

/** The set in force: read once per request, so one request never sees two sets. */
export function currentOf(rules: unknown): () => RuleSetLike {
  if (isRuleSet(rules)) return () => rules;
  if (typeof rules === 'object' && rules !== null && isRuleSet((rules as { current?: unknown }).current)) {
    const source = rules as { current: RuleSetLike };
    return () => source.current;
  }
  return invalid(
    'ERR_SLUICE_INVALID_OPTION',
    'rules',
    rules,
    'a rule set (parseRules, loadRules) or a watcher (watchRules)',
  );
}
