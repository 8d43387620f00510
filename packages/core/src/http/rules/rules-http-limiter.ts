import type { IncomingMessage } from 'node:http';
import { invalid, SluiceError } from '../../errors.js';
import { publishQueued } from '../../events.js';
import {
  checkKnownOptions,
  HTTP_ONLY_OPTIONS,
  LIMITER_OPTION_NAMES,
  POLICY_OPTION_NAMES,
  unsetOptions,
} from '../../known-options.js';
import { limiterSettings } from '../../limiter-settings.js';
import type { Decision, Limiter, LimiterBaseOptions, LimiterOptions, RateLimitStore } from '../../types.js';
import {
  type AdapterBinding,
  type HttpLimiter,
  NO_LIMITER_HANDLE,
  type Outcome,
  SKIPPED,
} from '../adapter-contract.js';
import { createClientAddressKey } from '../client-address.js';
import { checkIpv6Subnet } from '../client-key.js';
import { createFirstVisit, createRequestWaits } from '../first-visit.js';
import { heldFor, retryAfterMs } from '../headers/effective-window.js';
import { checkHeaders, createHeaderWriter, type HeaderWriter } from '../headers/index.js';
import { checkHeadersUnsent, checkUnsentMeanwhile, refusalUnlessSent, skippedUnlessSent } from '../headers-sent.js';
import { hold, unusedSlotDates } from '../hold.js';
import { checkCost, checkHandlers, checkMaxQueued } from '../http-options.js';
import { queueFull } from '../queue-full.js';
import { createRefuse } from '../refusal.js';
import { noteSpentWait, writeRefusalWait } from '../request-retry-after.js';
import { costFromUser, skipsFromUser } from '../user-functions.js';
import { createWarnOnce } from '../warnings.js';
import { compileDescriptors, DEFAULT_DESCRIPTORS, matchReadings, type RequestFacts } from './request-descriptors.js';
import { checkRuleAddresses } from './rule-address-spelling.js';
import type { RuleLike, RuleSetLike } from './rule-like.js';
import {
  combinedDecision,
  createRuleLimiters,
  decideRules,
  giveBack,
  givenBack,
  type RuleVerdict,
} from './rule-limiters.js';
import { checkRulePaths } from './rule-path-spelling.js';
import { currentOf, isRuleSet, RULES_MODE_LACKS, RULES_OPTION_NAMES, type RulesHttpOptions } from './rules-options.js';

/** An option given as none: `undefined`, `false` (`ban`, counting by outcome), or an empty `allowList`. */
const leftOut = (name: string, value: unknown): boolean =>
  value === undefined ||
  (value === false && (name === 'ban' || name === 'skipFailedRequests' || name === 'skipSuccessfulRequests')) ||
  (name === 'allowList' && Array.isArray(value) && value.length === 0);

/**
 * The HTTP semantics with `rules` in place of `policies`: the request's descriptors (see
 * `compileDescriptors`) are matched against the rule set in force; every matched rule decides
 * under its own limiter, all or nothing; each writes its own header items; the request waits
 * for the longest queue delay of them.
 */
export function createRulesHttpLimiter<Req, Res>(
  rulesOptions: RulesHttpOptions<Req>,
  binding: AdapterBinding<Req, Res>,
  extraOptionNames: readonly string[],
): HttpLimiter<Req, Res> {
  const options = rulesOptions as unknown as Record<string, unknown>;
  const clash = [...POLICY_OPTION_NAMES, 'policies', 'key', 'prefix', 'throttle'].find(
    (name) => options[name] !== undefined,
  );
  if (clash !== undefined) {
    throw new SluiceError(
      'ERR_SLUICE_CONFLICTING_OPTIONS',
      `[sluice] Option \`${clash}\` cannot be combined with \`rules\`: the rules give the limits, and the request's descriptors the keys.`,
    );
  }
  const notTaken = RULES_MODE_LACKS.find((name) => !leftOut(name, options[name]));
  if (notTaken !== undefined) {
    throw new SluiceError(
      'ERR_SLUICE_CONFLICTING_OPTIONS',
      `[sluice] Option \`${notTaken}\` is not taken with \`rules\`, which count by rule: give it to a limiter of policies instead.`,
    );
  }
  // The policy mode's options left `undefined` are taken as left out, as a policy limiter takes
  // rules mode's; those rules mode lacks are all left out or none here (checked above).
  const unset = unsetOptions(options, [...LIMITER_OPTION_NAMES, ...HTTP_ONLY_OPTIONS]);
  checkKnownOptions(options, [...RULES_OPTION_NAMES, ...RULES_MODE_LACKS, ...unset, ...extraOptionNames]);
  const current = currentOf(options.rules);
  const domains = current().domains;
  const domain = options.domain === undefined ? (domains.length === 1 ? domains[0] : undefined) : options.domain;
  if (typeof domain !== 'string' || domain === '') {
    invalid(
      'ERR_SLUICE_INVALID_OPTION',
      'domain',
      options.domain,
      `the rules' domain to use, one of ${JSON.stringify(domains)}`,
    );
  }
  // A static set never gains a domain: one it lacks would limit nothing, so it fails here. A
  // watcher's may arrive with a later reload; until then its requests pass, which `warn` says.
  const watched = !isRuleSet(options.rules);
  if (!watched && !domains.includes(domain)) {
    invalid('ERR_SLUICE_INVALID_OPTION', 'domain', domain, `a domain of the rules, one of ${JSON.stringify(domains)}`);
  }
  checkHandlers(options, ['skip', 'onLimited']);
  const cost = checkCost(options.cost);
  const maxQueued = checkMaxQueued(options.maxQueued);
  const { skip } = options;
  const headerOptions = checkHeaders(options.headers);
  const ipv6Subnet = checkIpv6Subnet(options.ipv6Subnet);
  const descriptorsOf = compileDescriptors<Req>(options.descriptors, options.fields);
  const base: Record<string, unknown> = {
    // Checked here because each rule's limiter is created on first use: bad settings fail at start-up.
    store: limiterSettings(options as LimiterBaseOptions).store,
    ...Object.fromEntries(
      ['clock', 'onStoreError', 'storeTimeoutMs', 'logger'].flatMap((k) =>
        options[k] === undefined ? [] : [[k, options[k]]],
      ),
    ),
  };
  // Where one rule refuses, the others' charges are given back: a store that cannot give one
  // back (the decision service's client) would have every refused request spend them.
  const store = base.store as RateLimitStore;
  if (store.refunds === false) {
    throw new SluiceError(
      'ERR_SLUICE_CONFLICTING_OPTIONS',
      `[sluice] Option \`rules\` gives back what the rules that let a request through were charged when another refuses it, and the store ${store.name} cannot give one back: a refused request would spend the others' quota. With the decision service, give it the rules and let it decide each request whole.`,
    );
  }
  const clock = (base.clock as (() => number) | undefined) ?? Date.now;
  const warn = createWarnOnce((base.logger as LimiterOptions['logger']) ?? console);
  // Only the built-in `path` and `remote_address` are respelt: a field of the same name gives
  // values as its function makes them.
  const sendsBuiltIn = (key: string): boolean =>
    !Object.hasOwn((options.fields ?? {}) as object, key) &&
    ((options.descriptors as readonly (readonly string[])[] | undefined) ?? DEFAULT_DESCRIPTORS).some((list) =>
      list.includes(key),
    );
  const sendsRulePath = sendsBuiltIn('path');
  const sendsRemoteAddress = sendsBuiltIn('remote_address');
  // Each set a watcher brings is checked as it comes into force, as the first one was: a reload
  // that renames or drops the domain would otherwise turn every limit off without a word.
  let checkedSet: RuleSetLike | undefined;
  let sets = 0;
  const checkSet = (rules: RuleSetLike): void => {
    if (rules === checkedSet) return;
    checkedSet = rules;
    sets++;
    if (!rules.domains.includes(domain)) {
      warn(
        'WRN_SLUICE_UNKNOWN_DOMAIN',
        `the rules ${sets === 1 ? 'hold' : 'now in force hold'} no domain \`${domain}\` (they hold ${JSON.stringify(rules.domains)}): every request passes uncounted until a reload brings it.`,
        String(sets),
      );
    }
    if (sendsRulePath) checkRulePaths(rules, domain, warn);
    if (sendsRemoteAddress) checkRuleAddresses(rules, domain, ipv6Subnet, warn);
  };
  checkSet(current());
  const addressKey = createClientAddressKey(binding, ipv6Subnet, warn);
  const limiterOf = createRuleLimiters(base);
  const writers = new WeakMap<RuleLike, HeaderWriter>();
  const writerOf = (verdict: RuleVerdict): HeaderWriter | undefined => {
    if (verdict.limiter === undefined) return undefined; // a blocked rule has no quota to describe
    let writer = writers.get(verdict.rule);
    if (writer === undefined) {
      writer = createHeaderWriter(verdict.limiter.policies, headerOptions, clock, warn);
      writers.set(verdict.rule, writer);
    }
    return writer;
  };

  /**
   * Each matched rule writes its own items; list fields are gathered and appended once, since
   * some frameworks (Fastify) cannot append to a field set earlier in the same hook.
   */
  const writeAll = (verdicts: readonly RuleVerdict[], res: Res, request: IncomingMessage): void => {
    const lists = new Map<string, string[]>();
    const target = {
      setHeader: binding.setHeader,
      appendHeader: (_res: Res, name: string, value: string) => {
        const list = lists.get(name);
        if (list === undefined) lists.set(name, [value]);
        else list.push(value);
      },
    };
    // Every writer made before any writes: one made now may share a name with another, which
    // must then note its names on this request too (WRN_SLUICE_DUPLICATE_POLICY_NAME).
    const writers = verdicts.map(writerOf);
    verdicts.forEach((verdict, i) => {
      writers[i]?.write(verdict.decision, res, target, request);
    });
    for (const [name, values] of lists) binding.appendHeader(res, name, values.join(', '));
  };

  const refuse = createRefuse<Req>(options);

  /** Requests held in queue mode right now, bounded by `maxQueued`. */
  let held = 0;

  const finish = (
    verdicts: RuleVerdict[],
    req: Req,
    res: Res,
    request: IncomingMessage,
  ): Outcome | Promise<Outcome> => {
    const decision = combinedDecision(verdicts);
    if (decision === undefined) return skippedUnlessSent(binding.rawResponse(res));
    // Refused by another rule, the request is not queued: every rule's charge is given back already.
    if (decision.allowed && decision.delayMs > 0 && held >= maxQueued) {
      // A queue with no room left: refused, not held, and what each rule charged given back.
      // A rule that delayed the request refuses it, in its own headers and in the decision;
      // the others give back what they charged.
      const delayed = (v: RuleVerdict) => v.limiter !== undefined && v.decision.delayMs > 0;
      // Each delayed rule's event, held back by its limiter, goes out as the refusal it became.
      const refuseQueued = (v: RuleVerdict) =>
        queueFull(v.limiter as Limiter, v.key, v.decision, v.cost, {
          chargedAt: v.chargedAt,
          answeredAt: v.answeredAt,
        }).then((refusal) => {
          publishQueued(v.decision, refusal);
          return refusal;
        });
      return Promise.all([
        givenBack(verdicts.map((v) => (delayed(v) ? { ...v, cost: 0 } : v))),
        ...verdicts.map((v) => (delayed(v) ? refuseQueued(v) : undefined)),
      ]).then(([back, ...refusals]) => {
        const refused = back.map((verdict, i) => {
          const decided = refusals[i];
          return decided === undefined ? verdict : { ...verdict, decision: decided };
        });
        const combined = { ...(combinedDecision(refused) as Decision), allowed: false, retryAfterMs: decision.delayMs };
        return answer(refused, { ...combined, delayMs: 0 }, req, res, request);
      });
    }
    return answer(verdicts, decision, req, res, request);
  };

  /** Headers, then the outcome: refused, passed on, or passed on after the queue hold. */
  const answer = (
    verdicts: RuleVerdict[],
    decision: Decision,
    req: Req,
    res: Res,
    request: IncomingMessage,
  ): Outcome | Promise<Outcome> => {
    const raw = binding.rawResponse(res);
    if (raw.headersSent) {
      // Other middleware answered while the rules were decided (a request timeout, say):
      // nothing is written into the response, queued rules' events, held back, go out as
      // decided, and what a request let through was charged is given back (a refused one's is).
      for (const verdict of verdicts) publishQueued(verdict.decision);
      if (decision.allowed) void giveBack(verdicts);
    }
    checkUnsentMeanwhile(raw);
    // A held request's fields are written once its hold ends, as of then.
    if (!decision.allowed || decision.delayMs === 0) writeAll(verdicts, res, request);
    // Held or refused by another rule, the queued rules' events, held back, go out as decided.
    if (decision.delayMs > 0) for (const verdict of verdicts) publishQueued(verdict.decision);
    if (!decision.allowed) {
      const waitMs = retryAfterMs(decision, spentWaits.of(request));
      if (waitMs !== undefined)
        writeRefusalWait(binding, res, request, waitMs, options.onLimited === undefined ? undefined : spentWaits);
      return refusalUnlessSent(binding, res, refuse(req, decision));
    }
    noteSpentWait(binding, res, request, decision, spentWaits);
    if (decision.delayMs === 0) return { action: 'next', decision };
    held++;
    // Published under the limiter of the rule that asked for the longest delay, the one held to.
    const longest = verdicts.find((v) => v.decision.delayMs === decision.delayMs)?.limiter as Limiter;
    return hold(binding.rawResponse(res), decision.delayMs, longest.namespace).then((heldToTheEnd): Outcome => {
      held--;
      // Gone, or answered by other middleware during the hold and left open (a stream): the
      // reserved slots were never used, and are given back.
      if (!heldToTheEnd || raw.headersSent) giveBackSlots(verdicts).catch(() => {});
      if (!heldToTheEnd) return { action: 'gone', decision };
      checkUnsentMeanwhile(raw);
      const heldMs = decision.delayMs;
      writeAll(
        verdicts.map((verdict) => ({ ...verdict, decision: heldFor(verdict.decision, heldMs) })),
        res,
        request,
      );
      return { action: 'next', decision };
    });
  };

  /** Gives back the slots of a request held to no use, each dated as `unusedSlotDates` says. */
  const giveBackSlots = async (verdicts: readonly RuleVerdict[]): Promise<void> => {
    const now = clock();
    const slotted = (v: RuleVerdict): RuleVerdict => ({
      ...v,
      ...unusedSlotDates(v.limiter, v, v.decision.delayMs, now),
    });
    await giveBack(verdicts.map(slotted));
  };

  // A limiter reached twice by one request (mounted on the app and on a router) counts it once.
  const firstVisit = createFirstVisit(binding.swapsRequestPrototype);
  const spentWaits = createRequestWaits(binding.swapsRequestPrototype);

  const handle = async (req: Req, res: Res): Promise<Outcome> => {
    const request = binding.rawRequest(req);
    if (!firstVisit(request)) return SKIPPED;
    checkHeadersUnsent(binding.rawResponse(res));
    if (typeof skip === 'function' && skipsFromUser(await skip(req), 'skip', warn))
      return skippedUnlessSent(binding.rawResponse(res));
    const route = binding.routePattern?.(req);
    const facts: RequestFacts = {
      request,
      url: binding.requestUrl(req),
      route,
      routeMethod:
        request.method === 'HEAD' && route !== undefined && binding.headRunsGet?.(req) ? 'GET' : request.method,
      remoteAddress: () => addressKey(req, request),
    };
    const rules = current();
    checkSet(rules);
    const descriptors = await descriptorsOf(req, facts);
    const units = typeof cost === 'number' ? cost : costFromUser(await (cost as (req: Req) => unknown)(req));
    // Other middleware may have answered while the user's functions ran: the store is not asked.
    checkUnsentMeanwhile(binding.rawResponse(res));
    const matches = matchReadings(rules, domain, descriptors);
    const verdicts = await decideRules(matches, limiterOf, units, clock, true);
    return finish(verdicts, req, res, request);
  };

  // Each rule's limiter counts under the rule's id as its `prefix`: nothing claimed to give up.
  return { handle, release: () => {}, ...NO_LIMITER_HANDLE };
}
