import { spentQuota } from '../../decision.js';
import { NO_STORE, publishQueued, publishRefusal } from '../../events.js';
import { createLimiter, type JointPart, jointPart, synchronousPathOf } from '../../limiter.js';
import { checkedReplies } from '../../store-reply.js';
import type {
  Decision,
  Limiter,
  LimiterOptions,
  Policy,
  PolicyDecision,
  RateLimitStore,
  StoreReply,
  StoreRequest,
} from '../../types.js';
import type { RuleLike, RuleMatchLike } from './rule-like.js';

/** One matched rule's part of a request's decision. */
export interface RuleVerdict {
  /** The position of the rule's match (its descriptor) in the list `decideRules` was given. */
  readonly index: number;
  readonly rule: RuleLike;
  readonly key: string;
  /** The units this rule was asked for; 0 looked without charging. */
  readonly cost: number;
  /** `undefined` for a blocked rule, which no limiter counts. */
  readonly limiter: Limiter | undefined;
  readonly decision: Decision;
  /**
   * The positions of the later matches on the same limiter and client key, which this verdict
   * decided with it as one charge of their summed cost (`decideRules`), and answers for.
   */
  readonly repeats?: readonly number[];
  /** The match's `readings`: those of a path read more than one way this verdict is part of. */
  readonly readings?: number;
  /**
   * The limiters' clock before the store was asked, so no later than the charge, and once its
   * answer was back: the refund of what this verdict charged is dated by them, and gives back
   * only what the charge still holds.
   */
  readonly chargedAt: number;
  readonly answeredAt: number;
}

/** A match's verdict, in the match's readings when it has them. */
function verdictOf(
  index: number,
  { rule, key, readings }: RuleMatchLike,
  cost: number,
  limiter: Limiter | undefined,
  decision: Decision,
  chargedAt: number,
  answeredAt: number,
): RuleVerdict {
  const verdict = { index, rule, key, cost, limiter, decision, chargedAt, answeredAt };
  return readings === undefined ? verdict : { ...verdict, readings };
}

/**
 * The limiter of each rule, made once per rule object. Its namespace is the rule's id, from
 * its place in the document and never from its limits: after a reload the new limiter reads
 * the state the old one left, which the store keeps per policy name, so a changed limit,
 * window or algorithm never gives a client a fresh quota (SPEC §4), and while old and new
 * limiters take turns a client is admitted no more than the larger limit allows.
 */
export function createRuleLimiters(base: Record<string, unknown>): (rule: RuleLike) => Limiter {
  const limiters = new WeakMap<RuleLike, Limiter>();
  return (rule) => {
    let limiter = limiters.get(rule);
    if (limiter === undefined) {
      const options = { ...base, policies: rule.policies, throttle: rule.throttle, prefix: rule.id };
      limiter = createLimiter(options as unknown as LimiterOptions);
      limiters.set(rule, limiter);
    }
    return limiter;
  };
}

/**
 * A blocked rule's policies in its decision events: none, in an array of the rule's own, as
 * each limiter's events carry an array no other limiter's do (metrics tell limiters apart by it).
 */
const blockedPolicies = new WeakMap<RuleLike, readonly Policy[]>();
function noPolicies(rule: RuleLike): readonly Policy[] {
  let policies = blockedPolicies.get(rule);
  if (policies === undefined) {
    policies = Object.freeze([]);
    blockedPolicies.set(rule, policies);
  }
  return policies;
}

/**
 * A blocked rule's refusal: nothing counted, and no wait would let the request through, as for
 * a cost above the limit (no `Retry-After`: a client told to come back at the window's end was
 * refused again, once a window, for as long as the rule stood). The reset is still the end of
 * the rule's window, the `duration_until_reset` envoyproxy/ratelimit reports for a limit of 0.
 */
function blockedDecision(rule: RuleLike, key: string, now: number): Decision {
  const windowMs = rule.rateLimit?.windowMs ?? 1000;
  const resetMs = windowMs - (now % windowMs);
  const shadow = rule.throttle?.mode === 'shadow';
  return {
    allowed: shadow,
    limit: 0,
    remaining: 0,
    resetAfterMs: resetMs,
    retryAfterMs: shadow ? 0 : Number.POSITIVE_INFINITY,
    delayMs: 0,
    ...(shadow ? { overLimit: 'shadow' as const } : { reason: 'cost-exceeds-limit' as const }),
    policies: [
      {
        name: 'blocked',
        limit: 0,
        windowMs,
        remaining: 0,
        resetAfterMs: resetMs,
        retryAfterMs: Number.POSITIVE_INFINITY,
        allowed: shadow,
      },
    ],
    key,
  };
}

/**
 * Whether the request passes: no rule refuses it, except that `quota_mode` rules refuse only
 * when all of them do (envoyproxy/ratelimit's quota mode). A request whose path was read more
 * than one way passes when each reading, its own verdicts and those of every reading, would
 * pass alone.
 */
export function passes(verdicts: readonly RuleVerdict[]): boolean {
  let quotaMatched = false;
  for (const { rule, decision } of verdicts) {
    if (rule.quotaMode === true) quotaMatched = true;
    else if (!decision.allowed) return false;
  }
  if (!quotaMatched) return true;
  // Each reading of the path fails where every quota rule it matched refuses. A verdict of no
  // reading in particular (nearly every one) is part of every reading.
  for (let r = 0; r < MAX_READINGS; r++) {
    let quota = 0;
    let refused = 0;
    for (const { rule, decision, readings = ALL_READINGS } of verdicts) {
      if (rule.quotaMode !== true || (readings & (1 << r)) === 0) continue;
      quota++;
      if (!decision.allowed) refused++;
    }
    if (quota > 0 && refused === quota) return false;
  }
  return true;
}

/** The most readings a path is read in (`matchReadings`): as sent, and up to three others. */
const MAX_READINGS = 4;
const ALL_READINGS = (1 << MAX_READINGS) - 1;

/**
 * True when the limiter charged this verdict: allowed with a cost, not let through by the fail
 * policy (the store charged nothing), and not merely reported by shadow mode.
 */
const charged = (verdict: RuleVerdict): boolean =>
  verdict.cost > 0 && verdict.decision.allowed && spentQuota(verdict.decision);

/**
 * Asks the limiter; a cost of 0 looks (`peek`) and charges nothing. A limiter `createLimiter`
 * did not make (one a caller of `decideRules` wrapped, say) has no synchronous path: it is
 * asked through `consume`.
 */
function ask(limiter: Limiter, key: string, cost: number, holdsQueue: boolean): Decision | Promise<Decision> {
  if (cost === 0) return limiter.peek(key);
  const now = synchronousPathOf(limiter);
  return now === undefined ? limiter.consume(key, { cost }) : now(key, cost, holdsQueue);
}

/**
 * Every matched rule decides; the request passes as `passes` says, and a refused request
 * spends nothing anywhere. Where the store can (`consumeAll`: Redis, every key in one slot),
 * all are decided in one store call, charged all or none. Otherwise each decides on its own
 * and, when the request is refused, the charges made are given back (`refund`). When every
 * rule decided at once (an in-process store, no descriptor that only looks) the refunds are
 * made in the same turn as the charges, before any other request can see them; otherwise a
 * concurrent request may briefly see a charge that is then refunded. `cost` is one for every
 * match or one per match (the decision service's per-descriptor `hits_addend`), and
 * `limiterOf` is told the match's position (the service's per-descriptor `limit` override).
 * `holdsQueue`: the caller holds queued requests itself, and publishes the events of the
 * verdicts it is given with a delay (`publishQueued`) once it knows whether its queue had room;
 * those of a request refused here, which no queue holds, are published here.
 */
export async function decideRules(
  matches: readonly (RuleMatchLike | undefined)[],
  limiterOf: (rule: RuleLike, index: number) => Limiter,
  cost: number | readonly number[],
  now: () => number,
  holdsQueue = false,
): Promise<RuleVerdict[]> {
  const repeats = repeatedMatches(matches, limiterOf);
  if (repeats !== undefined) return decideRepeats(matches, repeats, limiterOf, cost, now, holdsQueue);
  const askedAt = now();
  const joint = decideJointly(matches, limiterOf, cost, holdsQueue, askedAt, now);
  if (joint !== undefined) return joint;
  const decided: (RuleVerdict | Promise<RuleVerdict>)[] = [];
  let waiting = false;
  matches.forEach((match, index) => {
    if (match === undefined || match.rule.unlimited) return;
    const { rule, key } = match;
    const units = typeof cost === 'number' ? cost : (cost[index] as number);
    if (rule.blocked) {
      const decision = blockedDecision(rule, key, askedAt);
      publishRefusal(rule.id, NO_STORE, noPolicies(rule), decision, units);
      decided.push(verdictOf(index, match, units, undefined, decision, askedAt, askedAt));
      return;
    }
    const limiter = limiterOf(rule, index);
    const decision = ask(limiter, key, units, holdsQueue);
    if (decision instanceof Promise) {
      waiting = true;
      decided.push(decision.then((d) => verdictOf(index, match, units, limiter, d, askedAt, now())));
    } else {
      decided.push(verdictOf(index, match, units, limiter, decision, askedAt, now()));
    }
  });
  // No await before the refunds when nothing was waited for: they land in this turn.
  const verdicts = waiting ? await allOrGiveBack(decided, holdsQueue) : (decided as RuleVerdict[]);
  return passes(verdicts) ? verdicts : unheld(verdicts, holdsQueue);
}

/**
 * The later matches on the same limiter and client key as an earlier one, by the earlier's
 * position; `undefined` when there are none, as nearly always. Envoy sends a descriptor twice
 * when a route's and its virtual host's `rate_limits` both name it.
 */
function repeatedMatches(
  matches: readonly (RuleMatchLike | undefined)[],
  limiterOf: (rule: RuleLike, index: number) => Limiter,
): Map<number, number[]> | undefined {
  let repeats: Map<number, number[]> | undefined;
  for (let i = 1; i < matches.length; i++) {
    const match = matches[i];
    if (match === undefined || match.rule.unlimited || match.rule.blocked) continue;
    for (let first = 0; first < i; first++) {
      const earlier = matches[first];
      if (earlier?.rule !== match.rule || earlier.key !== match.key) continue;
      if (limiterOf(earlier.rule, first) !== limiterOf(match.rule, i)) continue;
      repeats ??= new Map();
      repeats.set(first, [...(repeats.get(first) ?? []), i]);
      break;
    }
  }
  return repeats;
}

/**
 * `decideRules` with each match's repeats decided with it as one charge of their summed cost:
 * decided one after the other, a later copy was refused over the earlier's charge, which was
 * then given back, and reported spent the quota the client still had (and a sum no quota
 * holds as a wait, where it can never pass).
 */
async function decideRepeats(
  matches: readonly (RuleMatchLike | undefined)[],
  repeats: ReadonlyMap<number, readonly number[]>,
  limiterOf: (rule: RuleLike, index: number) => Limiter,
  cost: number | readonly number[],
  now: () => number,
  holdsQueue: boolean,
): Promise<RuleVerdict[]> {
  const unitsAt = (index: number): number => (typeof cost === 'number' ? cost : (cost[index] as number));
  const once = [...matches];
  const costs = matches.map((_, index) => unitsAt(index));
  for (const [first, later] of repeats) {
    for (const index of later) {
      once[index] = undefined;
      // At most the largest cost core takes, which no quota holds: refused as never passing.
      costs[first] = Math.min((costs[first] as number) + unitsAt(index), Number.MAX_SAFE_INTEGER);
    }
  }
  const verdicts = await decideRules(once, limiterOf, costs, now, holdsQueue);
  return verdicts.map((verdict) => {
    const later = repeats.get(verdict.index);
    return later === undefined ? verdict : { ...verdict, repeats: later };
  });
}

/**
 * A request no queue will hold (refused, or failed): a queued rule's event, held back, goes
 * out as decided, and what each rule charged is given back.
 */
function unheld(verdicts: readonly RuleVerdict[], holdsQueue: boolean): Promise<RuleVerdict[]> {
  if (holdsQueue) for (const { decision } of verdicts) publishQueued(decision);
  return givenBack(verdicts);
}

/**
 * Every rule's verdict; when one rejected (its store failed under `onStoreError: 'throw'`),
 * the request fails with that error, and the others are `unheld` as for a refusal.
 */
async function allOrGiveBack(
  decided: readonly (RuleVerdict | Promise<RuleVerdict>)[],
  holdsQueue: boolean,
): Promise<RuleVerdict[]> {
  const settled = await Promise.allSettled(decided);
  const failed = settled.find((s) => s.status === 'rejected');
  const verdicts = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  if (failed === undefined) return verdicts;
  await unheld(verdicts, holdsQueue);
  throw failed.reason;
}

/**
 * Gives back what each verdict charged, and only that: a `quota_mode` rule that refused, a
 * shadow rule over its limit and a look at cost 0 were never charged.
 */
export async function giveBack(verdicts: readonly RuleVerdict[]): Promise<void> {
  await Promise.all(verdicts.filter(charged).map(refund));
}

/** `giveBack`, for a request refused: the verdicts come back showing their figures as they stand after it. */
export function givenBack(verdicts: readonly RuleVerdict[]): Promise<RuleVerdict[]> {
  return Promise.all(verdicts.map((v) => (charged(v) ? refunded(v) : v)));
}

/** A refund that fails leaves the charge: the client loses that much quota, nothing worse. */
const refund = ({ limiter, key, cost, chargedAt, answeredAt }: RuleVerdict): Promise<void> | undefined =>
  limiter?.refund(key, cost, { chargedAt, answeredAt }).catch(() => {});

/**
 * Every match decided in one `consumeAll` call, or `undefined` when that cannot be: fewer
 * than two matches to charge, a blocked, `quota_mode` or shadow rule (whose refusals do not
 * simply refuse the request), a match that only looks (cost 0), two matches on one client
 * key, limiters on different stores, or a store that cannot take these keys in one call.
 */
function decideJointly(
  matches: readonly (RuleMatchLike | undefined)[],
  limiterOf: (rule: RuleLike, index: number) => Limiter,
  cost: number | readonly number[],
  holdsQueue: boolean,
  askedAt: number,
  now: () => number,
): Promise<RuleVerdict[]> | undefined {
  const limited = matches.filter((m) => m !== undefined && !m.rule.unlimited);
  if (limited.length < 2 || limited.some((m) => m?.rule.blocked || m?.rule.quotaMode === true)) return undefined;
  const parts: { index: number; match: RuleMatchLike; limiter: Limiter; part: JointPart }[] = [];
  const clients = new Set<string>();
  for (const [index, match] of matches.entries()) {
    if (match === undefined || match.rule.unlimited) continue;
    const units = typeof cost === 'number' ? cost : (cost[index] as number);
    if (units === 0) return undefined;
    const limiter = limiterOf(match.rule, index);
    const part = jointPart(limiter, match.key, units);
    if (part === undefined || (parts.length > 0 && part.store !== parts[0]?.part.store)) return undefined;
    const client = `${part.request.namespace}|${part.request.key}`;
    if (clients.has(client)) return undefined;
    clients.add(client);
    parts.push({ index, match, limiter, part });
  }
  const { store } = (parts[0] as (typeof parts)[number]).part;
  const replies = askAll(
    store,
    parts.map((p) => p.part.request),
  );
  if (replies === undefined) return undefined;
  const verdicts = Promise.all(
    parts.map(async ({ index, match, limiter, part }, i) => {
      // Each rule's own guard: its timeout, its fail policy, and its limiter's count of store
      // errors and outage warning, as if it had asked alone.
      const decision = await part.settle(replies, i, holdsQueue);
      return verdictOf(index, match, part.request.cost, limiter, decision, askedAt, now());
    }),
  );
  return verdicts.then((decided) => {
    if (!passes(decided))
      for (const [i, verdict] of decided.entries()) if (charged(verdict)) parts[i]?.part.notCharged();
    return decided;
  });
}

/**
 * The store's `consumeAll`, a throw turned into a rejection; `undefined` when it declines. A
 * reply list from a store that does not check its own is checked here, so that one that is no
 * decision per request rejects, under each rule's fail policy, rather than reach the headers.
 */
function askAll(store: RateLimitStore, requests: readonly StoreRequest[]): Promise<StoreReply[]> | undefined {
  let replies: Promise<StoreReply[]> | undefined;
  try {
    replies = store.consumeAll?.(requests);
  } catch (error) {
    return Promise.reject(error);
  }
  if (replies === undefined || store.checksReplies === true) return replies;
  return replies.then((list) => checkedReplies(list, requests));
}

/**
 * Gives a charge back and shows the figures as they stand after it, as a look at the store
 * finds them: worked out from the charged figures, a queued charge (no quota before it or
 * after) or a bucket's burst above its rate showed quota that was not there, and a reset as
 * charged. The rule allowed the request: each policy stays allowed, with nothing to wait.
 * When the look fails, the figures stay as charged: never more quota than there is.
 */
async function refunded(verdict: RuleVerdict): Promise<RuleVerdict> {
  const { limiter, key, decision } = verdict;
  await refund(verdict);
  const now = await limiter?.peek(key).catch(() => undefined);
  if (now === undefined || now.reason !== undefined) return verdict;
  const policies = now.policies.map((p): PolicyDecision => ({ ...p, allowed: true, retryAfterMs: 0 }));
  const { limit, remaining, resetAfterMs } = now;
  return { ...verdict, decision: { ...decision, limit, remaining, resetAfterMs, delayMs: 0, policies } };
}

/**
 * The request's decision over every verdict: allowed as `passes` says; the figures on top are
 * the refusal that lasts longest, else the rule closest to exhaustion; `policies` lists them all.
 */
export function combinedDecision(verdicts: readonly RuleVerdict[]): Decision | undefined {
  let top: Decision | undefined;
  let delayMs = 0;
  for (const { decision } of verdicts) {
    delayMs = Math.max(delayMs, decision.delayMs);
    if (top === undefined || tighter(decision, top)) top = decision;
  }
  if (top === undefined) return undefined;
  const allowed = passes(verdicts);
  const policies = verdicts.flatMap((v) => v.decision.policies);
  return { ...top, allowed, retryAfterMs: allowed ? 0 : top.retryAfterMs, delayMs, policies };
}

const tighter = (a: Decision, b: Decision): boolean =>
  a.allowed !== b.allowed
    ? !a.allowed
    : a.allowed
      ? a.remaining * b.limit < b.remaining * a.limit
      : a.retryAfterMs > b.retryAfterMs;
