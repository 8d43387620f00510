import { checkCallOptions } from './call-options.js';
import { markedByStore, oneDecision as oneDecisionImport, storeUnavailableDecision, toDecision } from './decision.js';
import { shortHash } from './derived-namespace.js';
import { describe, invalid, SluiceError } from './errors.js';
import { decisionsWatched as decisionsWatchedImport, limiterEvents } from './events.js';
import { checkKnownOptions, LIMITER_HINTS, LIMITER_OPTION_NAMES } from './known-options.js';
import { limiterSettings } from './limiter-settings.js';
import { type BoundDecision, boundDecisionOf, givenKeyDecisionsOf } from './memory-store/memory-store.js';
import { limiterPolicies } from './policy.js';
import { chargeAgesOf, givesNothingBack } from './refund-charge.js';
import { internalized } from './shared-text.js';
import { createStoreGuard, STORE_FAILED } from './store-guard.js';
import { storeKey } from './store-key.js';
import { checkedReply } from './store-reply.js';
import { capacitiesFor, capacitiesVary, checkThrottleLends, largestCapacities, toThrottle } from './throttle.js';
import type {
  ConsumeOptions,
  Decision,
  Limiter,
  LimiterOptions,
  Policy,
  PolicyDecision,
  PolicyOutcome,
  RateLimitStore,
  RefundOptions,
  StoreReply,
  StoreRequest,
} from './types.js';

// What every decision calls, as this module's own constants: optimised code reads one as its
// value, where it loads an imported binding and checks its temporal dead zone on every use.
const oneDecision = oneDecisionImport;
const decisionsWatched = decisionsWatchedImport;

/** How long a client is told to wait when `onStoreError: 'deny'` refuses it. */
export const STORE_DENY_RETRY_AFTER_MS = 1000;
const prefixPattern = /^[A-Za-z0-9._:-]{1,64}$/;
const derivedPattern = /^rl-[A-Za-z0-9_-]{8}$/;
/** A namespace's claim: by a limiter that derived it, or by the limiters that named it as their `prefix`. */
interface Claim {
  kind: 'derived' | 'prefix';
  holders: number;
}
const claimedNamespaces = new WeakMap<object, Map<string, Claim>>();
/** How each limiter gives its claim up (`releaseNamespace`). */
const claimReleases = new WeakMap<Limiter, () => void>();
type Mutable<T> = { -readonly [K in keyof T]: T[K] };
type ConsumeOneSync = NonNullable<RateLimitStore['consumeOneSync']>;
/**
 * `holdsQueue`: the caller holds queued requests itself (the HTTP layer), and publishes the
 * event of a decision with a delay once it knows whether its queue had room (`publishQueued`).
 */
export type SynchronousPath = (key: string, cost: number, holdsQueue?: boolean) => Decision | Promise<Decision>;
const synchronousPaths = new WeakMap<Limiter, SynchronousPath>();

/** What deciding several limiters' requests in one store call (`consumeAll`) needs of one. */
export interface JointPart {
  readonly store: RateLimitStore;
  /** The request `consume(key, { cost })` would send. */
  readonly request: StoreRequest;
  /**
   * Reads this request's reply, the `index`th of the joint call's `replies`, under this
   * limiter's timeout and fail policy, as `consume` would, and reports it (`holdsQueue` as
   * for {@link SynchronousPath}).
   */
  settle(replies: Promise<readonly StoreReply[]>, index: number, holdsQueue?: boolean): Promise<Decision>;
  /**
   * Publishes the charge this part's allowed decision stood for as given back: the joint call
   * charged nothing, as another part refused, where limiters deciding apart charge and refund
   * (`sluice:refund`), so that allowed decisions less refunds are what was counted on any store.
   */
  notCharged(): void;
}
const jointParts = new WeakMap<Limiter, (key: string, cost: number) => JointPart | undefined>();

/**
 * The limiter's part in a joint decision, or `undefined` when its store cannot decide jointly
 * or its throttle is shadow (a shadow refusal must not hold the others back).
 */
export function jointPart(limiter: Limiter, key: string, cost: number): JointPart | undefined {
  return jointParts.get(limiter)?.(key, cost);
}

const unpublishedRefunds = new WeakMap<
  Limiter,
  (key: string, cost: number, options: RefundOptions | undefined) => Promise<unknown>
>();

/**
 * The limiter's `refund` without its `sluice:refund` event, for a charge whose decision goes
 * out as a refusal (a full queue's, `queueFull`): a refusal counts as nothing charged, so its
 * refund must not count as a charge given back. `limiter.refund` for a limiter `createLimiter`
 * did not make.
 */
export function refundUnpublished(
  limiter: Limiter,
  key: string,
  cost: number,
  options?: RefundOptions,
): Promise<unknown> {
  const refund = unpublishedRefunds.get(limiter);
  return refund === undefined ? limiter.refund(key, cost, options) : refund(key, cost, options);
}

/**
 * The limiter's `consume` without its promise when the store can decide at once (an in-process
 * store, a refusal a deny cache knows, a local-first client): the HTTP layer's fast path, which
 * then needs no promise at all. Otherwise it gives the promise `consume` would give, from one
 * store request: asking again through `consume` would look up the store's in-process state
 * twice. It throws what `consume` would reject with. The HTTP layer's fixed limiter keeps it
 * from construction: looked up on every request, it cost about 2 % of that layer's time.
 * `undefined` for a limiter `createLimiter` did not make.
 */
export function synchronousPathOf(limiter: Limiter): SynchronousPath | undefined {
  return synchronousPaths.get(limiter);
}

/** Options of limiters whose decisions are no requests', and what they publish instead. */
const unpublishedOptions = new WeakMap<LimiterOptions, Unpublished>();

/**
 * What a limiter whose decisions are no requests' still publishes: `'store-errors'` for counts
 * kept on another limiter's behalf (a ban's: its store failing is the limiter's), `'nothing'`
 * for a look at the store (a decision service's health check, once a second through an outage).
 * @internal
 */
export type Unpublished = 'store-errors' | 'nothing';

/**
 * `createLimiter` for decisions that are no requests' (a ban's refusals and bans, a health
 * look at the store): they are not published on `sluice:decision`, where they would count as
 * requests, and with `'nothing'` its store's failures are not either. Marked on a copy of
 * `options`, so that a limiter made from the same object later publishes as any does. For
 * sluice's own packages. @internal
 */
export function createUnpublishedLimiter(options: LimiterOptions, publishes: Unpublished = 'store-errors'): Limiter {
  const own = { ...options } as LimiterOptions;
  unpublishedOptions.set(own, publishes);
  return createLimiter(own);
}

/**
 * Creates a limiter over one or more policies. Every option is validated here, so a bad
 * configuration fails at start-up with an `ERR_SLUICE_*` code.
 *
 * @example
 * const limiter = createLimiter({ limit: 100, window: '1m', algorithm: 'gcra' });
 * const decision = await limiter.consume(clientIp);
 * if (!decision.allowed) reject(decision.retryAfterMs);
 */
export function createLimiter(options: LimiterOptions): Limiter {
  if (typeof options !== 'object' || options === null)
    invalid('ERR_SLUICE_INVALID_OPTION', 'options', options, 'an object');
  checkKnownOptions(options, LIMITER_OPTION_NAMES, LIMITER_HINTS);
  const policies = limiterPolicies(options as unknown as Record<string, unknown>);
  const throttle = toThrottle(options.throttle);
  checkThrottleLends(throttle, policies);
  const { clock, onStoreError, timeoutMs, logger, store } = limiterSettings(options);
  // The latest reading the clock has given: a refund measures its charge's age to it, as a
  // clock stepped back since shows less time passed than the states have seen.
  let latestReading = Number.NEGATIVE_INFINITY;
  // Without a clock, a function that reads nothing: the optimising compiler inlines it away,
  // where `clock?.()` loads and checks an absent clock on every decision (some 5 instructions).
  const readClock =
    clock === undefined
      ? noClock
      : (): number => {
          const reading = clock();
          if (reading > latestReading) latestReading = reading;
          return reading;
        };
  if (options.prefix !== undefined && (typeof options.prefix !== 'string' || !prefixPattern.test(options.prefix))) {
    invalid('ERR_SLUICE_INVALID_PREFIX', 'prefix', options.prefix, '1 to 64 letters, digits, `.`, `_`, `:` or `-`');
  }
  store.checkPolicies?.(policies, throttle, { storeTimeoutMs: timeoutMs, onStoreError });
  const { namespace, release } = claimNamespace(store, options.prefix, policies);
  const capacities = capacitiesFor(throttle, policies);
  const baseCapacities = policies.map((p) => p.capacity);
  // What a cost must exceed to never pass: elastic mode's capacity rises as the load falls.
  const ceilings = largestCapacities(throttle, policies) ?? baseCapacities;
  const singleCeiling = ceilings[0] as number;
  const events = limiterEvents(namespace, store, policies, unpublishedOptions.get(options));
  const checkReplies = store.checksReplies !== true;
  const { guarded, guardedRead, fail, succeed } = createStoreGuard(store, onStoreError, timeoutMs, logger, (cause) =>
    events.storeFailed(cause, onStoreError),
  );
  const failedDecision = (key: string): Decision => {
    const decision = storeUnavailableDecision(key, policies, onStoreError === 'allow', STORE_DENY_RETRY_AFTER_MS);
    // Shadow mode never refuses, not even when the fail policy would: it reports the refusal.
    if (throttle.mode === 'shadow' && !decision.allowed)
      Object.assign(decision, { allowed: true, retryAfterMs: 0, overLimit: 'shadow' });
    return decision;
  };
  /** A consume's decision when the store failed with `cause`, which its event names. */
  const unavailable = (key: string, cause: unknown): Decision => {
    const decision = failedDecision(key);
    if (decisionsWatched()) events.failedWith(decision, cause);
    return decision;
  };

  const request = (
    key: string,
    cost: number,
    caps: readonly number[],
    now: number | undefined = readClock(),
  ): StoreRequest => ({
    namespace,
    key: storeKey(key),
    policies,
    capacities: caps,
    cost,
    now,
  });

  /** The request `consume(key, { cost })` sends, checked. */
  const consumeRequest = (key: string, cost: number): StoreRequest =>
    request(checkKey(key), checkCost(cost), capacities());

  // A one-policy limiter, the common case, takes the store's leanest path: no reply, no
  // lists, and one request object for every call, which the store reads during the call only.
  const single = policies.length === 1 ? (policies[0] as Policy) : undefined;
  // A one-policy limiter's effective capacity where its throttle fixes it: the optimising
  // compiler folds it into each decision as a constant, where reading it from the capacities'
  // array cost some 7 instructions.
  const fixedCapacity = single !== undefined && !capacitiesVary(throttle) ? (capacities()[0] as number) : undefined;

  /** The decision a store's reply gives the request `asked`. */
  const replied = (key: string, reply: StoreReply, asked: StoreRequest): Decision => {
    const decision =
      single === undefined
        ? toDecision(key, reply, policies, asked.capacities, throttle.mode, asked.cost, ceilings)
        : oneDecision(
            key,
            reply.outcomes[0] as PolicyOutcome,
            single,
            asked.capacities[0] as number,
            throttle.mode,
            asked.cost,
            singleCeiling,
          );
    return markedByStore(decision, reply);
  };

  const ask = (key: string, asked: StoreRequest): Promise<Decision> => {
    const askedAt = askedAtOf(asked);
    return guardedRead(
      () => store.consume(asked),
      (reply) => replied(key, checkReplies ? checkedReply(reply, policies.length) : reply, asked),
      (cause) => unavailable(key, cause),
      giveBackLate === undefined ? undefined : (reply) => giveBackLate(key, asked.cost, reply, askedAt),
    );
  };
  /**
   * Under 'deny' a consume that timed out refused its request, so what the store's late answer
   * charged is given back: a rejected request spends no quota. Under 'allow', and in shadow
   * mode, which never refuses, the request went through, and its charge stands. Under 'throw'
   * the caller decides what the failure means (the decision service's Envoy lets the request
   * through by default), so the charge stands too.
   */
  const giveBackLate =
    onStoreError !== 'deny' || throttle.mode === 'shadow'
      ? undefined
      : (key: string, cost: number, reply: StoreReply | undefined, askedAt: number): void => {
          // One timeout later: late answers come in a burst as a stalled store wakes, and a
          // refund sent while the burst's later calls still look unanswered would find the
          // connection stalled (the Redis store's stall guard). A refund that fails leaves the
          // charge. Unreferenced: a refund due as the process ends is dropped.
          if (cost > 0 && reply?.allowed === true) {
            // Charged between the ask and now, when the answer came back. A user's clock that
            // throws leaves the charge, as a refund that fails does.
            let answeredAt: number;
            try {
              answeredAt = chargeTime();
            } catch {
              return;
            }
            const giveBack = () => refundWith(key, cost, { chargedAt: askedAt, answeredAt }, false).catch(() => {});
            setTimeout(giveBack, timeoutMs).unref();
          }
        };
  /** When a consume was asked, which a late answer's refund is dated from (0 where none follows). */
  const askedAtOf = (asked: StoreRequest): number => (giveBackLate === undefined ? 0 : (asked.now ?? Date.now()));
  /** What the store decides in-process at once (a deny cache's refusal, a local-first count); else `undefined`. */
  const atOnce = (key: string, asked: StoreRequest): Decision | undefined => {
    const reply = (store.decideAtOnce as NonNullable<RateLimitStore['decideAtOnce']>)(asked);
    if (reply === undefined) return undefined;
    // `replied` written out: one call fewer on the way to `oneDecision` keeps it inlined here,
    // some 120 instructions on every refusal the deny cache replays.
    return single === undefined
      ? toDecision(key, reply, policies, asked.capacities, throttle.mode, asked.cost, ceilings)
      : oneDecision(
          key,
          reply.outcomes[0] as PolicyOutcome,
          single,
          asked.capacities[0] as number,
          throttle.mode,
          asked.cost,
          singleCeiling,
        );
  };
  // A memory store made by core decides on keys as given through paths of its own: its methods
  // take safe keys, as any store's do, so that a store wrapping it gets the keys it is given.
  const onGivenKeys = givenKeyDecisionsOf(store);
  // One request object for every call of the paths whose store reads it during the call only:
  // an in-process store's decision that takes keys as given, and what a remote store may decide
  // at once (a deny cache's refusal, a local-first count). A limiter's store takes one of them,
  // never both.
  const keysAsGiven = onGivenKeys !== undefined || store.takesKeysAsGiven === true;
  const reused: Mutable<StoreRequest> = { namespace, key: '', policies, capacities: baseCapacities, cost: 0, now: 0 };
  /** The reused request, filled for this call. */
  const reuse = (key: string, cost: number): StoreRequest => {
    checkKey(key);
    checkCost(cost);
    const caps = capacities();
    // Every value first: a user's clock may itself ask this limiter, and so fill it again.
    const at = readClock();
    // A store that takes keys as given makes them safe itself, skipping that for a key it holds.
    reused.key = keysAsGiven ? key : storeKey(key);
    reused.cost = cost;
    reused.capacities = caps;
    reused.now = at;
    return reused;
  };
  const nowOne = (policy: Policy, key: string, cost: number): Decision => {
    const asked = reuse(key, cost);
    let outcome: PolicyOutcome;
    try {
      outcome = succeed(
        onGivenKeys !== undefined ? onGivenKeys.consumeOneSync(asked) : (store.consumeOneSync as ConsumeOneSync)(asked),
      );
    } catch (cause) {
      fail(cause);
      return unavailable(key, cause);
    }
    return oneDecision(key, outcome, policy, asked.capacities[0] as number, throttle.mode, cost, singleCeiling);
  };

  // A memory store made by core decides a one-policy limiter's consumes on a path bound to it
  // at creation: no request, no lookups of the limiter's layout or algorithm on each call.
  const bound = single === undefined ? undefined : boundDecisionOf(store, namespace, policies);
  const nowBound = (decideBound: BoundDecision, policy: Policy, key: string, cost: number): Decision => {
    checkKey(key);
    checkCost(cost);
    const capacity = fixedCapacity ?? (capacities()[0] as number);
    // Read before the store is asked: a bad reading rejects the call, never counts as a store failure.
    const at = readClock();
    let outcome: PolicyOutcome;
    try {
      outcome = succeed(decideBound(key, capacity, cost, at));
    } catch (cause) {
      fail(cause);
      return unavailable(key, cause);
    }
    return oneDecision(key, outcome, policy, capacity, throttle.mode, cost, singleCeiling);
  };

  /** In-process stores decide synchronously: one promise per decision instead of several. */
  const now = (key: string, cost: number, consumeSync: NonNullable<RateLimitStore['consumeSync']>): Decision => {
    if (bound !== undefined) return nowBound(bound, single as Policy, key, cost);
    if (single !== undefined && store.consumeOneSync !== undefined) return nowOne(single, key, cost);
    const asked = keysAsGiven ? reuse(key, cost) : consumeRequest(key, cost);
    let reply: StoreReply;
    try {
      reply = succeed(consumeSync(asked));
    } catch (cause) {
      fail(cause);
      return unavailable(key, cause);
    }
    return markedByStore(toDecision(key, reply, policies, asked.capacities, throttle.mode, cost, ceilings), reply);
  };

  // A store that decides in another process is asked with one request, read from the clock
  // once: what it may decide at once in the reused request, and on a miss a copy of it, which
  // the store holds until it answers (`consume` gets safe keys from every limiter).
  const atOnceFirst = (key: string, cost: number): Decision | Promise<Decision> =>
    atOnce(key, reuse(key, cost)) ?? ask(key, keysAsGiven ? { ...reused, key: storeKey(key) } : { ...reused });
  const decide = (key: string, cost: number): Decision | Promise<Decision> => {
    if (store.consumeSync !== undefined) return now(key, cost, onGivenKeys?.consumeSync ?? store.consumeSync);
    if (store.decideAtOnce === undefined) return ask(key, consumeRequest(key, cost));
    return atOnceFirst(key, cost);
  };

  // Each store's path chosen here, so `consume` reaches it with no call between: a shorter path
  // lets the JIT inline all of it. A one-policy limiter on a store that decides it in-process
  // goes to `nowBound` or `nowOne`; a store that may decide at once goes to `atOnceFirst`, where
  // through `decide` its key and cost checks stayed calls (some 55 instructions a refusal the
  // deny cache replays).
  const decideNow =
    bound !== undefined
      ? (key: string, cost: number) => nowBound(bound, single as Policy, key, cost)
      : single !== undefined && store.consumeSync !== undefined && store.consumeOneSync !== undefined
        ? (key: string, cost: number) => nowOne(single, key, cost)
        : store.consumeSync === undefined && store.decideAtOnce !== undefined
          ? atOnceFirst
          : decide;

  /** `refund`, with its event or without (`refundUnpublished`). */
  const refundWith = async (key: string, cost: number, options: RefundOptions | undefined, publish: boolean) => {
    // One reading for the store's `now` and the charge's age, which the store counts back from it.
    const reading = readClock();
    const ages = options === undefined ? undefined : chargeAgesOf(options, latestOf(reading ?? Date.now()));
    // A store on its own clock (Redis's) reads its milliseconds apart from the host's, by up to
    // one: the span is a millisecond wider, so a log finds the charge's entry within it.
    if (ages !== undefined && clock === undefined) ages.chargeSpanMs += 1;
    // Checked outside the guard: a bad key or cost is the caller's error, not a store failure.
    const refund: StoreRequest = { ...request(checkKey(key), checkCost(cost), baseCapacities, reading), ...ages };
    if (givesNothingBack(ages)) return;
    if ((await guarded(() => store.refund(refund))) !== STORE_FAILED && publish) events.refunded(cost);
  };
  /**
   * What a charge's age is measured to, by the limiter's clock (the host's without one): its
   * latest reading, later than the one now when the clock has stepped back since.
   */
  const chargeTime = (): number => latestOf(readClock() ?? Date.now());
  /** The clock's latest reading, `reading` among them. */
  const latestOf = (reading: number): number => {
    if (reading > latestReading) latestReading = reading;
    return latestReading;
  };

  const limiter: Limiter = {
    policies,
    namespace,
    consume(key, consumeOptions?: ConsumeOptions) {
      try {
        const cost = consumeOptions === undefined ? 1 : consumeCost(consumeOptions);
        const decision = decisionsWatched() ? events.observe(key, cost, decide) : decideNow(key, cost);
        // A field read first tells the optimising compiler the decision's shape, which has no
        // `then`: `Promise.resolve` then settles with it at once, where it would otherwise look
        // `then` up through the prototype chain on every call (some 290 instructions).
        void (decision as Decision).allowed;
        return Promise.resolve(decision);
      } catch (error) {
        return Promise.reject(error);
      }
    },
    async peek(key) {
      // Against the capacities a consume would get, so a request into the soft or elastic
      // overage counts as one that passes; shadow mode passes it anyway, marked.
      const caps = capacities();
      const asked = request(checkKey(key), 0, caps);
      const reply = await guardedRead<StoreReply, StoreReply | typeof STORE_FAILED>(
        () => store.consume(asked),
        (answer) => (checkReplies ? checkedReply(answer, policies.length) : answer),
        () => STORE_FAILED,
      );
      if (reply === STORE_FAILED) return failedDecision(key);
      const decision = markedByStore(toDecision(key, reply, policies, caps, throttle.mode, 0, ceilings), reply);
      const shadow = throttle.mode === 'shadow' || reply.overLimit === 'shadow';
      // Each policy says whether one more unit fits it, as the decision does for all of them,
      // and none has a wait: a cost-0 ask is refused only by a state already over its capacity
      // (an elastic capacity that fell, a clock behind a bucket's state), whose wait is no one's.
      let fits = true;
      for (let i = 0; i < reply.outcomes.length; i++) {
        const fitsPolicy = (reply.outcomes[i] as PolicyOutcome).remaining > 0;
        const entry = decision.policies[i] as PolicyDecision;
        entry.allowed = fitsPolicy;
        entry.retryAfterMs = 0;
        fits &&= fitsPolicy;
      }
      decision.retryAfterMs = 0;
      if (shadow && !fits) decision.overLimit = 'shadow';
      else {
        decision.allowed = fits;
        // The overage mark says a request passed only thanks to the mode: one that would not pass has none.
        if (!fits) delete decision.overLimit;
      }
      return decision;
    },
    async reset(key) {
      const safeKey = storeKey(checkKey(key));
      await guarded(() => store.reset(namespace, safeKey, policies));
    },
    refund: (key, cost, refundOptions?: RefundOptions) => refundWith(key, cost, refundOptions, true),
  };
  unpublishedRefunds.set(limiter, (key, cost, refundOptions) => refundWith(key, cost, refundOptions, false));
  jointParts.set(limiter, (key, cost) => {
    if (store.consumeAll === undefined || throttle.mode === 'shadow') return undefined;
    const caps = capacities();
    const asked = request(checkKey(key), checkCost(cost), caps);
    const askedAt = askedAtOf(asked);
    // Read under this limiter's own guard, so a failure makes its decision at once, with its cause.
    const read = (replies: Promise<readonly StoreReply[]>, index: number): Promise<Decision> =>
      guardedRead(
        () => replies,
        (list) => {
          const reply = list[index] as StoreReply;
          return markedByStore(toDecision(key, reply, policies, caps, throttle.mode, cost, ceilings), reply);
        },
        (cause) => unavailable(key, cause),
        // The call charged every request or none: each gives back its own when all were allowed.
        giveBackLate === undefined
          ? undefined
          : (list) => {
              if (Array.isArray(list) && list.every((reply) => reply?.allowed === true))
                giveBackLate(key, cost, list[index], askedAt);
            },
      );
    return {
      store,
      request: asked,
      settle: (replies, index, holdsQueue) =>
        decisionsWatched() ? events.observe(key, cost, () => read(replies, index), holdsQueue) : read(replies, index),
      notCharged: () => events.refunded(cost),
    };
  });
  // `holdsQueue` is read only by `observe`: nobody watching, the path is `decideNow`'s alone.
  if (release !== undefined) claimReleases.set(limiter, release);
  synchronousPaths.set(limiter, (key, cost, holdsQueue) =>
    decisionsWatched() ? events.observe(key, cost, decide, holdsQueue) : decideNow(key, cost),
  );
  return limiter;
}

/**
 * Limiters sharing a store must never count into each other by accident. Namespaces are
 * claimed per backing (a Redis store's client and prefix), so two store objects over one
 * client are one space. A derived namespace already taken is an error naming `prefix`: a
 * suffix in creation order would tie counts to the order limiters happen to be made in. An
 * explicit `prefix` is taken as given, whatever the policies: limiters share counts on
 * purpose, and a new version of a limiter (a rules reload) keeps every client's count, since
 * stores keep state per policy slot (SPEC §4). It may not take a derived namespace.
 */
function claimNamespace(
  store: RateLimitStore,
  prefix: string | undefined,
  policies: readonly Policy[],
): { namespace: string; release: (() => void) | undefined } {
  const ids = policies.map((p) => p.id).join('|');
  const backing = store.backing ?? store;
  const claimed = claimedNamespaces.get(backing) ?? new Map<string, Claim>();
  claimedNamespaces.set(backing, claimed);
  const namespace = prefix ?? `rl-${shortHash(ids, 8)}`;
  const owner = claimed.get(namespace)?.kind;
  if (prefix === undefined && owner !== undefined) {
    // A prefix would not part two limiters on a store that counts by policy name.
    const apart =
      store.countsByPolicyName === true ? 'name their policies apart' : 'give each limiter its own `prefix`';
    throw new SluiceError(
      'ERR_SLUICE_NAMESPACE_TAKEN',
      `[sluice] Another limiter with the same policies already counts on this ${store.name} store${store.backing === undefined || store.local === true ? '' : "'s connection"}; ${apart} to count apart, or give both the same \`prefix\` to share one count.`,
    );
  }
  if (prefix !== undefined && owner === 'derived') {
    invalid('ERR_SLUICE_INVALID_PREFIX', 'prefix', prefix, 'other than a namespace a limiter without a prefix derived');
  }
  // An explicit prefix needs remembering only where a derived namespace could meet it: kept
  // all, one claim per tier of a `policies(req)` function would grow without bound.
  if (prefix !== undefined && !derivedPattern.test(prefix))
    return { namespace: internalized(namespace), release: undefined };
  const claim = claimed.get(namespace) ?? { kind: prefix === undefined ? 'derived' : 'prefix', holders: 0 };
  claim.holders++;
  claimed.set(namespace, claim);
  const release = () => {
    claim.holders--;
    if (claim.holders === 0 && claimed.get(namespace) === claim) claimed.delete(namespace);
  };
  return { namespace: internalized(namespace), release };
}

/**
 * Gives up the namespace `limiter` claimed, so that another limiter may take it: for a limiter
 * whose app closed, or whose middleware failed its construction after making it. The limiter
 * must not be asked again. A second release of one limiter, or of a limiter that claimed
 * nothing (an explicit `prefix`, one `createLimiter` did not make), does nothing.
 *
 * @internal
 */
export function releaseNamespace(limiter: Limiter): void {
  claimReleases.get(limiter)?.();
  claimReleases.delete(limiter);
}

// Constants, not function declarations: a declared function's binding may be assigned, so
// optimised code checks it on every call. Each throws through a function of its own, called
// only when a check fails: the checks' bytecode stays a few bytes, and the optimising compiler,
// which inlines by bytecode size up to a budget per function, inlines both on every decision's
// path (on the deny cache's, the key's check had stayed a call).
const checkKey = (key: unknown): string => {
  if (typeof key !== 'string') invalidKey(key);
  return key;
};

const checkCost = (cost: unknown): number => {
  if (typeof cost !== 'number' || !Number.isSafeInteger(cost) || cost <= 0) invalidCost(cost);
  return cost;
};

const CONSUME_OPTIONS = ['cost'];

/** The cost `consume`'s options name, 1 when they leave it out; the decision checks it. */
function consumeCost(options: unknown): number {
  checkCallOptions(options, 'consume', CONSUME_OPTIONS, '{ cost: 2 }');
  const { cost } = options as ConsumeOptions;
  return cost === undefined ? 1 : cost;
}

const noClock = (): undefined => undefined;

function invalidKey(key: unknown): never {
  throw new SluiceError('ERR_SLUICE_INVALID_KEY', `[sluice] A client key must be a string; received ${typeof key}.`);
}

function invalidCost(cost: unknown): never {
  throw new SluiceError(
    'ERR_SLUICE_INVALID_COST',
    `[sluice] A cost must be a positive whole number; received ${describe(cost)}.`,
  );
}
