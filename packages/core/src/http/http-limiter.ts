import type { IncomingMessage } from 'node:http';
import { spentQuota } from '../decision.js';
import { invalid } from '../errors.js';
import { publishQueued } from '../events.js';
import { createLimiter, releaseNamespace, type SynchronousPath, synchronousPathOf } from '../limiter.js';
import { checkedLogger } from '../limiter-settings.js';
import { defaultMemoryStore } from '../memory-store/index.js';
import type { Decision, Limiter, LimiterOptions, RateLimitStore } from '../types.js';
import { type AdapterBinding, type HttpLimiter, NO_LIMITER_HANDLE, type Outcome, SKIPPED } from './adapter-contract.js';
import { checkAllowList } from './allow-list.js';
import { createBan } from './ban.js';
import { createClientAddressKey } from './client-address.js';
import { checkCountByOutcome } from './count-by-outcome.js';
import { warnIfCreatedInRequest } from './created-in-request.js';
import { createFirstVisit, createRequestWaits } from './first-visit.js';
import { checkCostCanPass, hasQueue } from './futile-options.js';
import { heldFor, retryAfterMs } from './headers/effective-window.js';
import { createHeaderWriter, type HeaderWriter } from './headers/index.js';
import { checkHeadersUnsent, checkUnsentMeanwhile, refusalUnlessSent, skippedUnlessSent } from './headers-sent.js';
import { type ChargeDates, hold, unusedSlotDates } from './hold.js';
import { checkHttpOptions, type HttpLimiterOptions, type PoliciesFor } from './http-options.js';
import { checkNotifications } from './notifications.js';
import { queueFull } from './queue-full.js';
import { createRefuse } from './refusal.js';
import { noteSpentWait, writeRefusalWait } from './request-retry-after.js';
import { createRulesHttpLimiter } from './rules/rules-http-limiter.js';
import { isRulesMode, type RulesHttpOptions } from './rules/rules-options.js';
import { createTierLimiters } from './tier-limiters.js';
import { costFromUser, keyFromUser, skipsFromUser, tierFromUser } from './user-functions.js';
import { createWarnOnce } from './warnings.js';

interface Entry {
  limiter: Limiter;
  headers: HeaderWriter;
  /** The limiter's synchronous path, which `createLimiter`'s limiters all have. */
  consume: SynchronousPath;
}

const ignore = (): void => {};

/**
 * The one implementation of the HTTP semantics behind every adapter (SPEC §5): options are
 * validated here at construction, then per request it resolves the key and the policies (per
 * tier when `policies` is a function), the cost, asks the limiter, writes the headers, tells
 * the notification hooks, holds a queued request, and arranges the refund of a request its
 * outcome does not count. Store failures surface as the limiter's `onStoreError` decides; with
 * `'throw'` the returned promise rejects and the adapter hands the error to its framework.
 */
export function createHttpLimiter<Req, Res>(
  // `never`: the adapter's own options type fixes what `requestWasSuccessful` receives.
  options: HttpLimiterOptions<Req, never> | RulesHttpOptions<Req>,
  binding: AdapterBinding<Req, Res>,
  extraOptionNames: readonly string[] = [],
): HttpLimiter<Req, Res> {
  if (typeof options !== 'object' || options === null)
    invalid('ERR_SLUICE_INVALID_OPTION', 'options', options, 'an object');
  if (isRulesMode(options)) return createRulesHttpLimiter(options, binding, extraOptionNames);
  const checked = checkHttpOptions<Req>(options, extraOptionNames);
  const all = options as unknown as Record<string, unknown>;
  const { key, skip, ipv6Subnet, policiesFor } = checked;
  const base: Record<string, unknown> = {
    ...checked.limiterOptions,
    store: checked.limiterOptions.store === undefined ? defaultMemoryStore() : checked.limiterOptions.store,
  };
  const clock = (base.clock as (() => number) | undefined) ?? Date.now;
  // Checked before anything logs to it; `createLimiter` would check it only after.
  const logger = checkedLogger(base.logger);
  const warn = createWarnOnce(logger);
  const wrap = (limiter: Limiter): Entry => ({
    limiter,
    headers: createHeaderWriter(limiter.policies, checked.headers, clock, warn),
    consume: synchronousPathOf(limiter) as SynchronousPath,
  });
  if (policiesFor === undefined && typeof checked.cost === 'number') checkCostCanPass(checked.cost, base);
  const tiers = policiesFor === undefined ? undefined : createTierLimiters(base, wrap, checked.limitVaries);
  const fixedEntry = tiers === undefined ? wrap(createLimiter(base as unknown as LimiterOptions)) : undefined;
  const consumeFixed = fixedEntry?.consume;
  const namespace = tiers?.namespace ?? (fixedEntry as Entry).limiter.namespace;
  const release = (): void => {
    if (fixedEntry !== undefined) releaseNamespace(fixedEntry.limiter);
    tiers?.release();
  };
  // The rest of the options checked with the namespace claimed: one that fails gives it back,
  // so the middleware made again with the mistake mended takes it.
  const { refuse, afterResponse, notify, isAllowed, ban } = releasedOnThrow(release, () => ({
    refuse: createRefuse<Req>(all),
    afterResponse: checkCountByOutcome<Req, Res>(all, warn, base.store as RateLimitStore | undefined),
    notify: checkNotifications<Req>(all, warn),
    isAllowed: checkAllowList<Req>(all.allowList, key === undefined ? ipv6Subnet : undefined),
    ban: createBan(all.ban, base, namespace),
  }));
  // Whether a charge may be given back later (after its response, a queue slot left unused, an
  // answer that came after other middleware answered), so its refund is dated: the clock is read
  // before the store is asked, no later than the charge, and once the decision is back.
  const datesCharges =
    afterResponse !== undefined || hasQueue(all) !== false || (base.store as RateLimitStore).local !== true;
  /** When `decision`'s charge was made, if it made one a refund may follow: between the ask and now. */
  const chargeDates = (decision: Decision, askedAt: number): ChargeDates | undefined =>
    datesCharges && spentQuota(decision) ? { chargedAt: askedAt, answeredAt: clock() } : undefined;
  const { cost } = checked;
  const fixedUnits = typeof cost === 'number' ? { cost } : undefined;

  const keyOf = createClientAddressKey(binding, ipv6Subnet, warn);

  /**
   * A banned client's refusal. The ban that starts at a refusal waits as long as the quota
   * does too, where that is longer: a client that came back when the ban ended would find its
   * quota still spent, and its refusal would count towards the next ban.
   */
  const banned = (
    req: Req,
    res: Res,
    request: IncomingMessage,
    decision: Decision,
    quotaWaitMs = 0,
  ): Outcome | Promise<Outcome> => {
    unsentMeanwhile(res);
    const waited = quotaWaitMs > decision.retryAfterMs ? { ...decision, retryAfterMs: quotaWaitMs } : decision;
    writeRefusalWait(binding, res, request, waited.retryAfterMs, refusalWaits);
    notify?.(req, waited);
    return refusalUnlessSent(binding, res, refuse(req, waited, ban?.status));
  };

  /** A refusal over the quota: the hooks are told, then the outcome. Made once, not per refusal. */
  const quotaRefusal = (req: Req, res: Res, decision: Decision): Outcome | Promise<Outcome> => {
    notify?.(req, decision);
    return refusalUnlessSent(binding, res, refuse(req, decision));
  };

  /** `checkUnsentMeanwhile` of the adapter's response. */
  const unsentMeanwhile = (res: Res): void => checkUnsentMeanwhile(binding.rawResponse(res));

  const spentWaits = createRequestWaits(binding.swapsRequestPrototype);

  /** Where a refused request may go on (an `onLimited`'s `next()`), the waits its refusals note. */
  const refusalWaits = all.onLimited === undefined ? undefined : spentWaits;

  /** A refusal over the quota, with its fields and `Retry-After` (none for a cost that can never pass). */
  const overQuota = (
    entry: Entry,
    decision: Decision,
    req: Req,
    res: Res,
    request: IncomingMessage,
    waitMs: number | undefined,
  ): Outcome | Promise<Outcome> => {
    entry.headers.write(decision, res, binding, request);
    if (waitMs !== undefined) writeRefusalWait(binding, res, request, waitMs, refusalWaits);
    return quotaRefusal(req, res, decision);
  };

  /** Requests held in queue mode right now, bounded by `maxQueued`. */
  let held = 0;

  /**
   * Headers, hooks, then the outcome: at once, or after a ban's strike or the queue hold.
   * `dates`: when the charge was made (`chargeDates`), which a refund of it is dated by.
   */
  const finish = (
    entry: Entry,
    decision: Decision,
    req: Req,
    res: Res,
    request: IncomingMessage,
    clientKey: string,
    units: number,
    dates: ChargeDates | undefined,
  ): Outcome | Promise<Outcome> => {
    // A queue with no room left: refused, not held, and its reserved slot given back. Its
    // decision's event, held back by the limiter, goes out as the refusal the client gets. The
    // queue is every client's, so the refusal is no strike towards this one's ban.
    if (decision.delayMs > 0 && held >= checked.maxQueued) {
      return queueFull(entry.limiter, clientKey, decision, units, dates).then((refused) => {
        publishQueued(decision, refused);
        unsentMeanwhile(res);
        return overQuota(entry, refused, req, res, request, retryAfterMs(refused, spentWaits.of(request)));
      });
    }
    if (!decision.allowed) {
      const waitMs = retryAfterMs(decision, spentWaits.of(request));
      if (ban === undefined || decision.reason !== undefined)
        return overQuota(entry, decision, req, res, request, waitMs);
      // Struck before any field is written: a refusal that starts a ban sends no quota fields.
      return ban.strike(clientKey).then((started) => {
        unsentMeanwhile(res);
        return started
          ? banned(req, res, request, started, waitMs)
          : overQuota(entry, decision, req, res, request, waitMs);
      });
    }
    // A held request's fields are written once its hold ends, as of then.
    if (decision.delayMs === 0) entry.headers.write(decision, res, binding, request);
    notify?.(req, decision);
    noteSpentWait(binding, res, request, decision, spentWaits);
    const charged = spentQuota(decision);
    // Dated by the charge: a refund gives back only what the charge still holds (nothing once
    // its window has passed, what has not refilled since), never a later request's units.
    const refund = () => entry.limiter.refund(clientKey, units, dates);
    if (decision.delayMs === 0) {
      if (charged) afterResponse?.(req, res, binding.rawResponse(res), refund);
      return { action: 'next', decision };
    }
    held++;
    publishQueued(decision);
    // Async: a clock that throws rejects the refund, as a refund that fails, no more.
    const refundSlot = async () =>
      entry.limiter.refund(clientKey, units, dates && unusedSlotDates(entry.limiter, dates, decision.delayMs, clock()));
    return hold(binding.rawResponse(res), decision.delayMs, entry.limiter.namespace).then((heldToTheEnd): Outcome => {
      held--;
      if (!heldToTheEnd) {
        // The reserved slot was never used: give it back to the queue.
        refundSlot().catch(ignore);
        return { action: 'gone', decision };
      }
      // Other middleware answered during the hold and left the response open (a stream): the
      // slot is given back, and nothing more is written.
      const raw = binding.rawResponse(res);
      if (raw.headersSent) refundSlot().catch(ignore);
      checkUnsentMeanwhile(raw);
      entry.headers.write(heldFor(decision, decision.delayMs), res, binding, request);
      if (charged) afterResponse?.(req, res, raw, refund);
      return { action: 'next', decision };
    });
  };

  const general = async (req: Req, res: Res, request: IncomingMessage): Promise<Outcome> => {
    if (skip !== undefined && skipsFromUser(await skip(req), 'skip', warn))
      return skippedUnlessSent(binding.rawResponse(res));
    const clientKey = key === undefined ? keyOf(req, request) : keyFromUser(await key(req));
    if (isAllowed !== undefined && skipsFromUser(await isAllowed(req, clientKey), 'allowList', warn))
      return skippedUnlessSent(binding.rawResponse(res));
    const bannedNow = ban === undefined ? undefined : await ban.check(clientKey);
    if (bannedNow !== undefined) return banned(req, res, request, bannedNow, spentWaits.of(request));
    const entry =
      tiers === undefined
        ? (fixedEntry as Entry)
        : tierFromUser(
            await (policiesFor as PoliciesFor<Req>)(req, clientKey),
            tiers.entryFor,
            checked.limitVaries ? 'limit' : 'policies',
          );
    const units = typeof cost === 'number' ? cost : costFromUser(await cost(req));
    // Other middleware may have answered while the user's functions ran: the store is not asked.
    unsentMeanwhile(res);
    const askedAt = datesCharges ? clock() : 0;
    const decision = await entry.consume(clientKey, units, true);
    return finishLate(entry, decision, req, res, request, clientKey, units, askedAt);
  };

  /** `finish` for a decision the store answered later, unless other middleware answered meanwhile. */
  const finishLate = (
    entry: Entry,
    decision: Decision,
    req: Req,
    res: Res,
    request: IncomingMessage,
    clientKey: string,
    units: number,
    askedAt: number,
  ): Outcome | Promise<Outcome> => {
    const raw = binding.rawResponse(res);
    const dates = chargeDates(decision, askedAt);
    if (raw.headersSent) {
      // A queued decision's event, held back for the queue, goes out as decided.
      publishQueued(decision);
      if (decision.allowed && spentQuota(decision)) entry.limiter.refund(clientKey, units, dates).catch(ignore);
    }
    checkUnsentMeanwhile(raw);
    return finish(entry, decision, req, res, request, clientKey, units, dates);
  };

  // Fixed policies, the default key and a fixed cost: nothing to await but, perhaps, the store.
  const simple =
    fixedEntry !== undefined &&
    skip === undefined &&
    key === undefined &&
    fixedUnits !== undefined &&
    isAllowed === undefined &&
    ban === undefined;

  // A request met a second time goes on and keeps the first decision.
  const firstVisit = createFirstVisit(binding.swapsRequestPrototype);
  warnIfCreatedInRequest(binding.dispatchFrame, logger);

  return {
    handle(req, res) {
      const request = binding.rawRequest(req);
      if (!firstVisit(request)) return SKIPPED;
      checkHeadersUnsent(binding.rawResponse(res));
      if (!simple) return general(req, res, request);
      const entry = fixedEntry as Entry;
      const units = (fixedUnits as { cost: number }).cost;
      const clientKey = keyOf(req, request);
      const askedAt = datesCharges ? clock() : 0;
      const decision = (consumeFixed as SynchronousPath)(clientKey, units, true);
      if (!(decision instanceof Promise))
        return finish(entry, decision, req, res, request, clientKey, units, chargeDates(decision, askedAt));
      return decision.then((asked) => finishLate(entry, asked, req, res, request, clientKey, units, askedAt));
    },
    limiter: fixedEntry?.limiter,
    limiterFor: tiers === undefined ? NO_LIMITER_HANDLE.limiterFor : (policies) => tiers.entryFor(policies).limiter,
    release,
  };
}

/** What `make` returns; if it throws, `release` runs first. */
function releasedOnThrow<T>(release: () => void, make: () => T): T {
  try {
    return make();
  } catch (error) {
    release();
    throw error;
  }
}
