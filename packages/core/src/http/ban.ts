import { fittedRoot } from '../derived-namespace.js';
import type { Duration } from '../duration.js';
import { toMs } from '../duration.js';
import { invalid, SluiceError } from '../errors.js';
import { publishRefusal } from '../events.js';
import { checkKnownOptions, NO_PEER_NAMES, POLICY_OPTION_NAMES } from '../known-options.js';
import { createUnpublishedLimiter } from '../limiter.js';
import { MAX_UNITS } from '../policy.js';
import type { Decision, Limiter, LimiterOptions, RateLimitStore } from '../types.js';

/**
 * After more than `after` refusals within `window`, refuse the client outright for `duration`
 * (as @fastify/rate-limit's `ban`, rate-limiter-flexible's `blockDuration`).
 */
export interface BanOptions {
  /** Refusals allowed within `window`; the next one bans. */
  after: number;
  /** The span refusals are counted over. @default duration */
  window?: Duration | undefined;
  /** How long a ban lasts. */
  duration: Duration;
  /** Status of the response to a banned client. @default 403 */
  status?: 403 | 429 | undefined;
}

export interface Ban {
  readonly status: 403 | 429;
  /** The ban in force for this key, as a refused decision with `reason: 'banned'`; else undefined. */
  check(key: string): Promise<Decision | undefined>;
  /** Counts a refusal; resolves to the new ban when this refusal was one too many. */
  strike(key: string): Promise<Decision | undefined>;
}

const NAMES = ['after', 'window', 'duration', 'status'];

/**
 * Both counts live in the limiter's own store, under namespaces derived from its own, so a
 * ban holds across every process sharing a Redis: refusals are counted by a
 * sliding-window-counter policy of `after` per `window`, and a ban is a GCRA cell of one
 * request per `duration`, spent when the ban starts and so refused until it ends.
 */
export function createBan(value: unknown, base: Record<string, unknown>, namespace: string): Ban | undefined {
  if (value === undefined || value === false) return undefined;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    invalid('ERR_SLUICE_INVALID_OPTION', 'ban', value, "an object such as `{ after: 10, duration: '15m' }`, or false");
  }
  const options = value as Record<string, unknown>;
  checkKnownOptions(options, NAMES, NO_PEER_NAMES, 'ban');
  // The ban counts under policies of its own, which a store counting by policy name (the
  // decision service's client) asks its rules about: none limits them, so no one was banned.
  // Always given: the HTTP layer gives a limiter without one a memory store of its own.
  const store = base.store as RateLimitStore;
  if (store.countsByPolicyName === true) {
    throw new SluiceError(
      'ERR_SLUICE_CONFLICTING_OPTIONS',
      `[sluice] Option \`ban\` counts refusals and bans in the limiter's store under policies of its own, and the store ${store.name} asks its rules about each policy by name: none would ever ban, so leave \`ban\` out with this store.`,
    );
  }
  const { after, duration, status = 403 } = options;
  if (typeof after !== 'number' || !Number.isSafeInteger(after) || after < 0) {
    invalid('ERR_SLUICE_INVALID_OPTION', 'ban.after', after, 'a whole number of refusals ≥ 0');
  }
  if (status !== 403 && status !== 429) invalid('ERR_SLUICE_INVALID_OPTION', 'ban.status', status, '403 or 429');
  if (duration === undefined) invalid('ERR_SLUICE_INVALID_OPTION', 'ban.duration', duration, 'a duration');
  const durationMs = toMs(duration as Duration, 'ban.duration');
  // `undefined` alone means the default: a `null` is a mistake to report, as for `status`.
  const windowMs = toMs((options.window === undefined ? duration : options.window) as Duration, 'ban.window');
  // The ban's own limiters would refuse these as their policies' figures, named as options the
  // user never wrote: each is named here as the ban's.
  if (durationMs > MAX_UNITS) invalid('ERR_SLUICE_INVALID_OPTION', 'ban.duration', duration, 'at most 2^49 ms');
  if ((after + 1) * windowMs > MAX_UNITS)
    invalid(
      'ERR_SLUICE_INVALID_OPTION',
      'ban',
      value,
      `an \`after\` and a \`window\` small enough that (after + 1) × window stays at most 2^49; ${after + 1} × ${windowMs} ms is too large`,
    );
  const shared = { ...base };
  for (const name of POLICY_OPTION_NAMES) delete shared[name];
  // Bookkeeping, not requests: a strike or a ban's start published as an allowed decision
  // counted requests that were refused. A request refused by a ban in force is published below.
  const make = (suffix: string, policy: Record<string, unknown>): Limiter =>
    createUnpublishedLimiter({
      ...shared,
      throttle: undefined,
      // Its own namespace fitted to leave room for the suffix: two prefixes alike in their
      // first 60 characters keep their bans apart.
      prefix: `${fittedRoot(namespace, 60)}.${suffix}`,
      policies: [policy],
    } as unknown as LimiterOptions);
  const refusals = make('bn', { name: 'refusals', limit: after + 1, window: windowMs });
  const bans = make('bd', { name: 'ban', limit: 1, window: durationMs, algorithm: 'gcra' });
  // Its policy named as the one violated, at the refusal that starts the ban (whose charge the
  // ban's cell allowed) as at every one after it.
  const banned = (decision: Decision): Decision => ({
    ...decision,
    allowed: false,
    reason: 'banned',
    policies: decision.policies.map((policy) => ({ ...policy, allowed: false })),
  });
  return {
    status,
    async check(key) {
      const decision = await bans.peek(key);
      // A peek asks for no units, so its wait is the cell's: until the ban is fully over.
      if (decision.allowed || decision.reason !== undefined) return undefined;
      const refusal = banned({ ...decision, retryAfterMs: decision.resetAfterMs });
      publishRefusal(bans.namespace, store.name, bans.policies, refusal, 1);
      return refusal;
    },
    async strike(key) {
      const counted = await refusals.consume(key);
      if (counted.reason !== undefined || counted.remaining > 0) return undefined;
      const started = await bans.consume(key);
      return started.reason === undefined ? banned({ ...started, retryAfterMs: durationMs }) : undefined;
    },
  };
}
