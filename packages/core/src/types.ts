import type { Duration } from './duration.js';

/** The algorithms sluice implements, each in every store (SPEC §2). */
export type AlgorithmName =
  | 'token-bucket'
  | 'leaky-bucket'
  | 'gcra'
  | 'fixed-window'
  | 'sliding-window-log'
  | 'sliding-window-counter';

/** One rate policy as a user writes it. */
export interface PolicyOptions {
  /** Name shown in headers and used in store keys: letters, digits, `.`, `_`, `-`. */
  name?: string | undefined;
  /** Requests (or cost units) allowed per window. */
  limit: number;
  /** Window length in ms or as a duration string. */
  window: Duration;
  /** @default 'sliding-window-counter' */
  algorithm?: AlgorithmName | undefined;
  /** Bucket capacity for `token-bucket`, `leaky-bucket` and `gcra`. @default limit */
  burst?: number | undefined;
  /** Shape traffic instead of rejecting (`leaky-bucket` and `gcra` only). */
  queue?: { maxDelayMs: Duration } | undefined;
  /** `token-bucket` only: add this many tokens at once every `refillInterval`. @default limit */
  refillAmount?: number | undefined;
  /** `token-bucket` only: refill in steps of this length instead of continuously. */
  refillInterval?: Duration | undefined;
}

/**
 * A validated policy with every default applied. This is what travels to a store with each
 * call: stores keep no per-limiter configuration, so one store can serve many limiters.
 */
export interface Policy {
  readonly name: string;
  /** Stable id of this policy inside its limiter's namespace; safe in any store key. */
  readonly id: string;
  /**
   * Where the policy's state is kept under its namespace: its `name` when one was given,
   * else `_` and its position. A changed limit, window or algorithm keeps the slot, so a new
   * version of the policy reads the old one's state instead of starting afresh.
   */
  readonly slot: string;
  /**
   * What a stored state means: the algorithm and every figure its state depends on. A store
   * that finds a state of another version converts it (see `seedState`), never trusts it.
   */
  readonly version: string;
  readonly algorithm: AlgorithmName;
  readonly limit: number;
  readonly windowMs: number;
  /** Base capacity: `burst` for the buckets, `limit` for the windows. */
  readonly capacity: number;
  /** 0 unless queue mode is on. */
  readonly maxDelayMs: number;
  /** Interval refill (`token-bucket`): tokens per step and step length; 0 when continuous. */
  readonly refillAmount: number;
  readonly refillIntervalMs: number;
}

/** What one algorithm decides for one policy. All fields are integers. */
export interface PolicyOutcome {
  allowed: boolean;
  /**
   * Quota left against the capacity the store was given: after this request when it was
   * charged, as it stands otherwise (also for a policy that allowed a request another refused).
   */
  remaining: number;
  /** Until the quota is fully restored, on the same terms as `remaining`. */
  resetAfterMs: number;
  /** Until a request of the same cost would pass; 0 when allowed. */
  retryAfterMs: number;
  /** Queue mode: how long to hold the request before passing it on. */
  delayMs: number;
}

/** One decision asked of a store: every policy of one limiter for one client key. */
export interface StoreRequest {
  /** The limiter's namespace: safe characters only, chosen by core. */
  readonly namespace: string;
  /** The client key, made safe by core (see `storeKey`), except as `RateLimitStore.takesKeysAsGiven` says. */
  readonly key: string;
  readonly policies: readonly Policy[];
  /** Effective capacity per policy (raised by soft or elastic throttling). */
  readonly capacities: readonly number[];
  /** Cost units to charge; 0 asks without charging. */
  readonly cost: number;
  /** Epoch ms; `undefined` lets the store use its own clock (Redis: `TIME`). */
  readonly now: number | undefined;
  /**
   * A refund's: how long before `now` (the store's own clock when `now` is `undefined`) the
   * units were charged at the earliest, whole ms. The store gives back only what that charge
   * still holds (`Algorithm.refund`, with `chargeOf`). Absent: charged at `now`.
   */
  readonly chargeAgeMs?: number | undefined;
  /**
   * A refund's: how long after that the charge may have been made, whole ms (its decision came
   * back by then): a log finds the charge's own entry, stamped by the store's clock, within it.
   */
  readonly chargeSpanMs?: number | undefined;
}

export interface StoreReply {
  /** True when every policy allowed and all were charged; false when none was. */
  allowed: boolean;
  /** The time the store decided at, epoch ms. */
  now: number;
  outcomes: PolicyOutcome[];
  /**
   * A mark set by a store whose own rules throttle, as a decision service's do: `'shadow'` on
   * a refusal (`allowed` false, nothing charged) says the store let it through, and the
   * limiter passes it as its own shadow mode would; on a pass, `'shadow'`, `'soft'` or
   * `'elastic'` says the pass went over the rule's limit, into its shadow or overage. The
   * limiter marks its decision's `overLimit` so. Read on the replies of `consume`,
   * `consumeAll` and `consumeSync`, not of `decideAtOnce`.
   */
  overLimit?: Decision['overLimit'];
}

/**
 * A store runs the algorithms atomically: a decision over several policies charges all of
 * them or none. Implemented by the memory store (`createMemoryStore`) and `@sluice/redis`.
 */
/** What a store learns of each limiter made on it (`RateLimitStore.checkPolicies`). */
export interface StoreLimiterSettings {
  readonly storeTimeoutMs: number;
  readonly onStoreError: OnStoreError;
}

export interface RateLimitStore {
  /** Used in log and error messages. */
  readonly name: string;
  /** True when calls finish in-process without I/O: the limiter then sets no timeout timer. */
  readonly local?: boolean;
  /**
   * True when every reply `consume` and `consumeAll` resolve with is a decision by
   * construction (the store checks what it reads, as sluice's Redis store does): the limiter
   * then does not check it again. Without it, a reply that is no decision is `ERR_SLUICE_BAD_STORE_REPLY`.
   */
  readonly checksReplies?: boolean;
  /**
   * What the store's keys live in (a Redis store: its client, key prefix and mode). Limiters claim
   * their namespaces per backing, so two store objects over one backing cannot share a
   * namespace by accident. Defaults to the store object itself.
   */
  readonly backing?: object;
  /**
   * True when the store counts each policy by its name alone, whatever the limiter's namespace
   * (the decision service's client, whose service keys counts by descriptor): limiters there
   * count apart only when their policies are named apart, and errors say so.
   */
  readonly countsByPolicyName?: boolean;
  /**
   * Called once when a limiter is created: throws a coded error for policies, or a throttle,
   * this store cannot decide, so the limiter fails at start-up rather than at every request.
   * `limiter` tells how the limiter of these `policies` (the same array every request carries)
   * answers a call that takes longer than `storeTimeoutMs`: by its `onStoreError`. A call the
   * store holds back past it (until a connection opens, say) should be sent only where that
   * answer took it as done: a consume under `'allow'`, a refund or reset under any policy but
   * `'throw'`.
   */
  checkPolicies?(policies: readonly Policy[], throttle: Throttle, limiter: StoreLimiterSettings): void;
  /** Decides and, when every policy allows and `cost > 0`, charges every policy. */
  consume(request: StoreRequest): Promise<StoreReply>;
  /**
   * The same decision without a promise, for in-process stores: the limiter's fast path. For a
   * store that takes keys as given (`takesKeysAsGiven`), the limiter reuses `request` for its
   * next call: read it during this call only.
   */
  consumeSync?(request: StoreRequest): StoreReply;
  /**
   * Optional, alongside `consumeSync`, for a request with exactly one policy: that policy's
   * outcome alone, which is the whole decision (its `allowed` is the reply's). The limiter's
   * leanest path: it reuses `request` for its next call, so read it during this call only.
   * The result may carry more fields than `PolicyOutcome`, and the store may reuse it for its
   * next call: the limiter reads it during this call only.
   */
  consumeOneSync?(request: StoreRequest): PolicyOutcome;
  /**
   * Optional, for a store whose backend is elsewhere: the decision `consume` would give, when
   * the store can make it in-process at once (the Redis store's deny cache knows the refusal;
   * local-first mode counts the client), charged as `consume` charges; `undefined` to ask
   * `consume`, which the limiter then does at once, in the same turn, with a copy of the
   * request. Synchronous, so such a decision costs the limiter no promise and no timer. The
   * limiter reuses `request` for its next call, so read it during this call only; the store
   * may reuse the reply's objects for its next call: the limiter reads it during this call only.
   */
  decideAtOnce?(request: StoreRequest): StoreReply | undefined;
  /**
   * True when `consumeSync`, `consumeOneSync` and `decideAtOnce` get the client key as the
   * caller gave it, not made safe: the store makes it safe itself (`storeKey`), and may skip
   * that for a key it finds among the safe keys it holds (`safeWhenHeld`). Every other call
   * gets safe keys. A store that wraps another (`{ ...store, consumeOneSync }`) copies the
   * flag: its own methods then get keys as given too, unless it sets the flag to false.
   */
  readonly takesKeysAsGiven?: boolean;
  /**
   * Optional: decides several requests in one atomic step and charges every one only if all
   * allow, else none (a decision service's descriptors). Each request names its own
   * (namespace, key). Each reply's `allowed` says whether its own policies allowed. Returns
   * `undefined` when this store cannot decide these requests together (two requests on one
   * (namespace, key), or a Redis Cluster whose keys fall in several slots): the caller then
   * decides them one by one.
   */
  consumeAll?(requests: readonly StoreRequest[]): Promise<StoreReply[]> | undefined;
  /** Forgets the client's state under every policy of the namespace. */
  reset(namespace: string, key: string, policies: readonly Policy[]): Promise<void>;
  /** Gives `request.cost` units back to every policy (never beyond a fresh state). */
  refund(request: StoreRequest): Promise<void>;
  /**
   * `false` for a store whose `refund` always rejects (the decision service's client: Envoy's
   * protocol has none). Adapter options that give a charge back after the response
   * (`skipSuccessfulRequests`, `skipFailedRequests`) then fail at creation rather than count
   * every request. @default true
   */
  readonly refunds?: boolean;
}

export type ThrottleMode = 'hard' | 'soft' | 'elastic' | 'shadow';

/** How a limiter acts over the limit (SPEC §3). */
export type Throttle =
  | { mode: 'hard' }
  | { mode: 'soft'; overagePercent: number }
  | { mode: 'elastic'; maxOveragePercent: number; load?: (() => number) | undefined }
  | { mode: 'shadow' };

export type OnStoreError = 'allow' | 'deny' | 'throw';

/** Receives one-time warnings; defaults to `console`. */
export interface Logger {
  warn(message: string): void;
}

/** The decision for one policy, as reported in `Decision.policies`. */
export interface PolicyDecision {
  name: string;
  limit: number;
  /** Window in ms, for headers. */
  windowMs: number;
  remaining: number;
  resetAfterMs: number;
  /** As `Decision.retryAfterMs`, for this policy: `Infinity` when the cost can never pass it. */
  retryAfterMs: number;
  allowed: boolean;
}

/** Why a store did not decide, why a request can never pass, or that the client is banned (an adapter's `ban`). */
export type DecisionReason = 'store-unavailable' | 'cost-exceeds-limit' | 'banned';

/** The result of `consume` or `peek` (SPEC §3). Top-level figures describe the policy closest to exhaustion. */
export interface Decision {
  allowed: boolean;
  limit: number;
  /** Integer ≥ 0, against the base limit (soft and elastic overage never shows here). */
  remaining: number;
  resetAfterMs: number;
  /** 0 when allowed; `Infinity` when the cost can never pass (`reason: 'cost-exceeds-limit'`). */
  retryAfterMs: number;
  /** Queue mode: hold the request this long, then pass it on. */
  delayMs: number;
  /** Set when the request passed only because of soft, elastic or shadow throttling. */
  overLimit?: 'soft' | 'elastic' | 'shadow';
  policies: PolicyDecision[];
  reason?: DecisionReason;
  /** The client key as given to the limiter. */
  key: string;
}

export interface LimiterBaseOptions {
  store?: RateLimitStore | undefined;
  /** Epoch ms; for tests. Stores use their own clock when absent (Redis `TIME`). */
  clock?: (() => number) | undefined;
  /**
   * Namespace for this limiter's keys; default derived from its policies. Typed without
   * `undefined` (which is taken as absent): Fastify's register options type a `prefix` of their
   * own so, and the plugin's options must fit them.
   */
  prefix?: string;
  throttle?: Throttle | undefined;
  /** @default 'allow' */
  onStoreError?: OnStoreError | undefined;
  /** @default 100 */
  storeTimeoutMs?: number | undefined;
  logger?: Logger | undefined;
}

export type LimiterOptions = LimiterBaseOptions &
  (
    | (Omit<PolicyOptions, 'name'> & { name?: string | undefined; policies?: undefined })
    | {
        policies: readonly PolicyOptions[];
        limit?: undefined;
        window?: undefined;
        algorithm?: undefined;
        burst?: undefined;
        queue?: undefined;
      }
  );

export interface ConsumeOptions {
  /** Cost units of this request: a positive integer. @default 1 */
  cost?: number | undefined;
}

export interface Limiter {
  readonly policies: readonly Policy[];
  readonly namespace: string;
  consume(key: string, options?: ConsumeOptions): Promise<Decision>;
  /** The decision as of now without charging; `allowed` says whether a cost-1 request would pass. */
  peek(key: string): Promise<Decision>;
  reset(key: string): Promise<void>;
  /** Gives `cost` units back to every policy: no more than the charge `options.chargedAt` names still holds. */
  refund(key: string, cost: number, options?: RefundOptions): Promise<void>;
}

export interface RefundOptions {
  /**
   * When the units were charged, epoch ms by the limiter's clock (`Date.now()` without one):
   * read it just before `consume`. Each policy then gives back only what that charge still
   * holds: nothing once its window has passed, a bucket's units less what has refilled since,
   * the log's entry of that time. Without it the units count as charged now.
   */
  chargedAt?: number | undefined;
  /**
   * When the decision came back, on the same clock: the charge was made between `chargedAt` and
   * this. The sliding window log looks for its entry there, which a store on its own clock
   * (Redis without `clock`) stamps after `chargedAt`. @default chargedAt
   */
  answeredAt?: number | undefined;
}
