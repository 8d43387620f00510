import { formatMs, type Policy, type PolicyOutcome, SluiceError } from '@sluice/core';
import { type RateLimitUnit, UNIT_MS } from '@sluice/rules';
import type { SluiceStatusMetadata } from '../sluice-metadata.js';
import { UINT32_MAX } from '../wire-types.js';

/** `google.protobuf.Value` as the gRPC loader decodes it. */
interface WireValue {
  numberValue?: number;
  stringValue?: string;
  structValue?: { fields?: Record<string, WireValue> };
  listValue?: { values?: WireValue[] };
}

interface WireStatus {
  code?: string;
  currentLimit?: { requestsPerUnit?: number; name?: string; unit?: unknown };
  limitRemaining?: number;
  durationUntilReset?: { seconds?: number; nanos?: number };
}

/** The parts of a `RateLimitResponse` the client reads. */
export interface WireResponse {
  overallCode?: string;
  statuses?: WireStatus[];
  dynamicMetadata?: { fields?: Record<string, WireValue> };
}

type Mark = NonNullable<SluiceStatusMetadata['overLimit']>;
const knownMarks: readonly string[] = ['soft', 'elastic', 'shadow'] satisfies Mark[];

/**
 * sluice's own figures for status `index`, when the service is sluice. A mark this client does
 * not know (from a later service) is left out, said once: the decision stands without it.
 */
function sluiceFigures(
  response: WireResponse,
  index: number,
  warnOnce: (message: string) => void,
): Partial<SluiceStatusMetadata> {
  const statuses = response.dynamicMetadata?.fields?.sluice?.structValue?.fields?.statuses?.listValue?.values;
  const fields = statuses?.[index]?.structValue?.fields;
  if (fields === undefined) return {};
  let overLimit = fields.overLimit?.stringValue;
  if (overLimit !== undefined && !knownMarks.includes(overLimit)) {
    warnOnce(
      `[sluice] WRN_SLUICE_UNKNOWN_MARK: the decision service marked a status overLimit "${overLimit}", which this client does not know (it knows ${knownMarks.join(', ')}); decisions so marked carry no mark.`,
    );
    overLimit = undefined;
  }
  return {
    retryAfterMs: fields.retryAfterMs?.numberValue,
    delayMs: fields.delayMs?.numberValue,
    overLimit,
  } as Partial<SluiceStatusMetadata>;
}

const durationMs = (d: WireStatus['durationUntilReset']): number =>
  d === undefined ? 0 : (d.seconds ?? 0) * 1000 + Math.ceil((d.nanos ?? 0) / 1_000_000);

/**
 * How long a refused policy waits: sluice's exact figure (-1: never), else until the reset.
 * A service that gives neither still refused: the policy's window bounds the wait, where 0
 * would tell every client to retry at once.
 */
function refusedFor(retryAfterMs: number | undefined, resetAfterMs: number, policy: Policy): number {
  if (retryAfterMs !== undefined && retryAfterMs < 0) return Number.POSITIVE_INFINITY;
  if (retryAfterMs !== undefined && retryAfterMs > 0) return retryAfterMs;
  return resetAfterMs > 0 ? resetAfterMs : policy.windowMs;
}

/**
 * One policy's outcome from its descriptor's status. Without sluice's metadata (another
 * Envoy rate-limit service), a refused descriptor waits until its reset. `refusedWhole`: the
 * response refuses naming no descriptor, so that every policy is refused (`toOutcomes`), none
 * said to be unlimited for want of a rule.
 */
function toOutcome(
  status: WireStatus,
  figures: Partial<SluiceStatusMetadata>,
  policy: Policy,
  domain: string,
  warnOnce: (message: string) => void,
  refusedWhole: boolean,
): PolicyOutcome {
  // The code decides, as it does for Envoy: a refusal without `current_limit` is no missing rule.
  const allowed = status.code !== 'OVER_LIMIT';
  if (status.currentLimit === undefined && allowed && !refusedWhole) {
    // An `unlimited` rule's status has no `current_limit` either: envoyproxy/ratelimit and sluice
    // answer it with `limit_remaining` at the uint32's top, where no rule leaves 0.
    warnOnce(
      status.limitRemaining === UINT32_MAX
        ? ruleMismatch(policy, 'unlimited', domain, 'so it is not limited there')
        : `[sluice] WRN_SLUICE_NO_RULE: the decision service has no rule for policy "${policy.name}" in domain "${domain}"; it is not limited there.`,
    );
    return { allowed: true, remaining: policy.capacity, resetAfterMs: 0, retryAfterMs: 0, delayMs: 0 };
  }
  if (status.currentLimit !== undefined) checkRule(status.currentLimit, policy, domain, warnOnce);
  const resetAfterMs = durationMs(status.durationUntilReset);
  return {
    allowed,
    remaining: status.limitRemaining ?? 0,
    resetAfterMs,
    retryAfterMs: allowed ? 0 : refusedFor(figures.retryAfterMs, resetAfterMs, policy),
    delayMs: figures.delayMs ?? 0,
  };
}

/**
 * Warns once where the service's rule differs from the local policy: its limit, or its unit
 * (UNKNOWN, sluice's for a window of no whole unit, says nothing). The service decides, so its
 * remaining and reset reach the headers beside the local limit and window.
 */
function checkRule(
  rule: NonNullable<WireStatus['currentLimit']>,
  policy: Policy,
  domain: string,
  warnOnce: (message: string) => void,
): void {
  const limit = rule.requestsPerUnit ?? 0;
  // A unit this client does not know (a number past the proto's list) says nothing either.
  const unit = typeof rule.unit === 'string' ? rule.unit : undefined;
  const unitMs = UNIT_MS[unit?.toLowerCase() as RateLimitUnit] as number | undefined;
  if (limit === policy.limit && (unitMs === undefined || unitMs === policy.windowMs)) return;
  const theirs = unitMs === undefined ? `a limit of ${limit}` : `${limit} per ${unit}`;
  warnOnce(
    ruleMismatch(policy, theirs, domain, 'and headers show the local limit and window beside its remaining and reset'),
  );
}

/** The warning that the service's rule for `policy` is `theirs`, and what follows from the service deciding. */
const ruleMismatch = (policy: Policy, theirs: string, domain: string, follows: string): string =>
  `[sluice] WRN_SLUICE_RULE_MISMATCH: policy "${policy.name}" is ${policy.limit} per ${formatMs(policy.windowMs)} here but ${theirs} in the decision service's rules for domain "${domain}"; the service decides, ${follows}.`;

function badReply(what: string): never {
  throw new SluiceError('ERR_SLUICE_BAD_STORE_REPLY', `[sluice] The decision service answered ${what}.`);
}

/**
 * Every policy's outcome, made to agree with the response's `overall_code`, which is what Envoy
 * acts on (it refuses a request exactly when the code is `OVER_LIMIT`). A descriptor reported
 * over its limit in an `OK` response passed: under `quota_mode`, where a request passes while
 * any quota rule has room, and under a service's shadow mode. sluice's service marks the
 * latter: the reply is then the refusal, marked `overLimit: 'shadow'`, which the limiter passes
 * as its own shadow mode does. Another service's passes read as `quota_mode`'s, unmarked: the
 * two answers are alike. On a pass, sluice's mark of a rule's throttle (a shadow-mode rule's, a
 * soft or elastic overage's) is the reply's. A service that refuses without naming a descriptor
 * over its limit has every policy refuse, each until its reset. A response with no code of the
 * two, or without one status per descriptor (which `rls.proto` promises), did not decide:
 * `ERR_SLUICE_BAD_STORE_REPLY`.
 */
export function toOutcomes(
  response: WireResponse,
  policies: readonly Policy[],
  domain: string,
  warnOnce: (message: string) => void,
): { allowed: boolean; outcomes: PolicyOutcome[]; overLimit?: Mark } {
  const code = response.overallCode;
  if (code !== 'OK' && code !== 'OVER_LIMIT')
    badReply(`overall_code ${String(code ?? 'none')}, neither OK nor OVER_LIMIT`);
  const statuses = response.statuses ?? [];
  if (statuses.length !== policies.length)
    badReply(
      `${statuses.length} status${statuses.length === 1 ? '' : 'es'} for ${policies.length} descriptor${policies.length === 1 ? '' : 's'}; it owes one per descriptor`,
    );
  const allowed = code === 'OK';
  const refusedWhole = !allowed && statuses.every((status) => status.code !== 'OVER_LIMIT');
  const figures = policies.map((_, i) => sluiceFigures(response, i, warnOnce));
  const outcomes = policies.map((policy, i) =>
    toOutcome(
      statuses[i] as WireStatus,
      figures[i] as Partial<SluiceStatusMetadata>,
      policy,
      domain,
      warnOnce,
      refusedWhole,
    ),
  );
  if (allowed) {
    const marks = figures.map((f) => f.overLimit);
    if (outcomes.some((o, i) => !o.allowed && marks[i] === 'shadow')) {
      return { allowed: false, outcomes, overLimit: 'shadow' };
    }
    const passes = outcomes.map((o) => (o.allowed ? o : { ...o, allowed, retryAfterMs: 0 }));
    const overLimit = marks.includes('shadow') ? 'shadow' : marks.find((mark) => mark !== undefined);
    return overLimit === undefined ? { allowed, outcomes: passes } : { allowed, outcomes: passes, overLimit };
  }
  if (outcomes.some((o) => !o.allowed)) return { allowed, outcomes };
  return {
    allowed,
    outcomes: outcomes.map((o, i) => ({
      ...o,
      allowed,
      retryAfterMs: refusedFor(undefined, o.resetAfterMs, policies[i] as Policy),
      delayMs: 0,
    })),
  };
}
