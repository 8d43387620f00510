import {
  createWarnOnce,
  type Decision,
  decideRules,
  giveBack as giveBackVerdicts,
  passes,
  type ResolvedHeaders,
  type RuleVerdict,
  reportedPolicyIndex,
} from '@sluice/core';
import type { RuleSet } from '@sluice/rules';
import { createHeaderFields } from './header-fields.js';
import { createRuleMatcher } from './override-rules.js';
import { checkRuleLimiters, createServiceLimiters, type LimiterSettings } from './rule-limiters.js';
import { reportedUnit } from './units.js';
import { type DescriptorAnswer, type RateLimitAnswer, type RateLimitCall, UINT32_MAX } from './wire-types.js';

export interface DeciderOptions extends LimiterSettings {
  /** Which RateLimit fields to put in `response_headers_to_add`; `undefined` for none. */
  headers: ResolvedHeaders | undefined;
  /** Answer OK what the rules refused (envoyproxy's global `SHADOW_MODE`). */
  shadowMode: boolean;
}

export interface Decided {
  answer: RateLimitAnswer;
  /** One per descriptor a rule limits: what was charged, and where to give it back. */
  verdicts: readonly RuleVerdict[];
  /** The rules refused the call (and so charged nothing), though shadow mode may answer it OK. */
  refused: boolean;
}

const noLimit: DescriptorAnswer = {
  code: 'OK',
  limitRemaining: 0,
  durationUntilResetMs: 0,
  retryAfterMs: 0,
  delayMs: 0,
};

/** An `unlimited` rule's descriptor: as envoyproxy/ratelimit answers it, all the wire holds remains. */
const unlimited: DescriptorAnswer = { ...noLimit, limitRemaining: UINT32_MAX };

/**
 * Decides one `RateLimitRequest` with core's `decideRules`, as the adapters decide a request
 * over rules: every descriptor a rule limits is asked of its rule's limiter at its own cost
 * (`hits` 0 looks without charging); the request passes only if every one allows, and a
 * refused request spends nothing anywhere: decided in one store call, charged all or none,
 * where the store can (`consumeAll`), else charged one by one and refunded on refusal.
 */
export function createDecider(options: DeciderOptions) {
  const limiterOf = createServiceLimiters(options);
  const matchRules = createRuleMatcher();
  const clock = options.clock ?? Date.now;
  const headerFields = options.headers && createHeaderFields(options.headers, clock, createWarnOnce(options.logger));

  async function decide(call: RateLimitCall, rules: RuleSet): Promise<Decided> {
    const costs = call.descriptors.map((d) => d.hits);
    const matches = matchRules(rules, call);
    const verdicts = await decideRules(matches, limiterOf, costs, clock);
    // As the adapters decide: `quota_mode` rules refuse a request only when all of them refuse.
    const refused = !passes(verdicts);
    const statuses = matches.map((match) => (match?.rule.unlimited ? unlimited : noLimit));
    for (const { index, decision, repeats = [] } of verdicts) {
      // A descriptor sent again (a route's and its virtual host's `rate_limits` both name it)
      // was charged with its first, and answers as it does.
      for (const at of [index, ...repeats]) statuses[at] = toStatus(decision);
    }
    // Shadow mode changes the answer only: the statuses and the charges stay the rules'. Each
    // refusing status is marked, so that the Node client tells the pass from a `quota_mode`
    // one, which also answers OK over a status OVER_LIMIT.
    const refusing = refused && !options.shadowMode;
    if (refused && options.shadowMode) {
      for (const status of statuses) if (status.code === 'OVER_LIMIT') status.overLimit = 'shadow';
    }
    const answer: RateLimitAnswer = {
      overallCode: refusing ? 'OVER_LIMIT' : 'OK',
      statuses,
      responseHeaders: headerFields === undefined ? [] : headerFields(verdicts, refusing),
    };
    return { answer, verdicts, refused };
  }

  /** Throws the `RulesError` of a set whose rules the store cannot decide. */
  const checkRules = (rules: RuleSet): void => checkRuleLimiters(rules, limiterOf);
  return { decide, giveBack, checkRules };
}

const nothingCharged: Promise<unknown> = Promise.resolve();

/**
 * Gives back what a decided call charged, as if it had not been asked, through core's
 * `giveBack`: each descriptor its rule's limiter charged, at its `hits_addend`. A refused call
 * has nothing left to give (`decideRules` gave its charges back as it refused). A refund that
 * fails leaves the charge (the limiter counts the store error); it never rejects.
 */
const giveBack = ({ refused, verdicts }: Decided): Promise<unknown> =>
  refused ? nothingCharged : giveBackVerdicts(verdicts);

/**
 * `requests_per_unit` and `limit_remaining` are uint32 on Envoy's wire: a sluice limit beyond
 * it (a policy may count to 2^49 / window) is reported as the most the field holds, which
 * still reads as "more than you will use", rather than wrapped round to a small number.
 */
const onTheWire = (count: number): number => Math.min(count, UINT32_MAX);

/** A decision as Envoy's `DescriptorStatus`, with sluice's own figures beside it. */
function toStatus(decision: Decision): DescriptorAnswer {
  // The policy whose limit, remaining and reset are the decision's: two policies alike in
  // limit and count named the first's unit beside the other's reset (MINUTE, 337 s).
  const policy = decision.policies[reportedPolicyIndex(decision)] ?? decision.policies[0];
  const status: DescriptorAnswer = {
    code: decision.allowed ? 'OK' : 'OVER_LIMIT',
    currentLimit: {
      requestsPerUnit: onTheWire(decision.limit),
      unit: reportedUnit(policy?.windowMs ?? 0),
      name: policy?.name ?? '',
    },
    limitRemaining: onTheWire(decision.remaining),
    durationUntilResetMs: decision.resetAfterMs,
    // A cost beyond the capacity never passes: -1 says "never" where JSON has no Infinity.
    retryAfterMs: Number.isFinite(decision.retryAfterMs) ? decision.retryAfterMs : -1,
    delayMs: decision.delayMs,
  };
  if (decision.overLimit !== undefined) status.overLimit = decision.overLimit;
  return status;
}
