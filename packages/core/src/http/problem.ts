import type { Decision } from '../types.js';
import { statedWaitMs } from './headers/effective-window.js';

/** The draft's problem type for a client over its quota (draft-11 §5.1). */
export const QUOTA_EXCEEDED_TYPE = 'https://iana.org/assignments/http-problem-types#quota-exceeded';
/** The draft's problem type for capacity the server cannot grant right now (draft-11 §5.2). */
export const TEMPORARY_REDUCED_CAPACITY_TYPE =
  'https://iana.org/assignments/http-problem-types#temporary-reduced-capacity';
/** The draft's problem type for a client refused for how it has behaved (draft-11 §5.3): a ban. */
export const ABNORMAL_USAGE_DETECTED_TYPE = 'https://iana.org/assignments/http-problem-types#abnormal-usage-detected';
export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** An RFC 9457 problem document with the draft's `violated-policies` member. */
export interface RateLimitProblem {
  type: string;
  title: string;
  status: number;
  detail: string;
  'violated-policies': string[];
}

const QUOTA_TITLE = 'Quota exceeded';
const BANNED_TITLE = 'Abnormal usage detected';
const UNAVAILABLE_TITLE = 'Request limits cannot be checked right now';
const UNAVAILABLE_DETAIL = 'The rate-limit store is unavailable; retry shortly.';
const NEVER_DETAIL = 'This request costs more quota units than the policy grants at once; it can never pass as it is.';
const BLOCKED_DETAIL = 'A rule refuses every such request (its limit is 0); it can never pass as it is.';
/** A refusal by a rule that blocks every request: a limit of 0, which no policy of a limiter's has. */
const isBlocked = (decision: Decision): boolean => decision.limit === 0;
const restoredDetail = (seconds: number): string => `Quota restored for this request in ${seconds} s.`;
const bannedDetail = (decision: Decision): string =>
  `Too many refused requests: this client is refused for ${Math.ceil(decision.retryAfterMs / 1000)} s.`;
/**
 * The wait the detail states, in whole seconds: the one `Retry-After` carries, so the two never
 * disagree (the decision's own wait can be shorter than a policy's that has no quota left).
 */
const waitSeconds = (decision: Decision): number => Math.ceil((statedWaitMs(decision) ?? decision.retryAfterMs) / 1000);
const detailOf = (decision: Decision): string =>
  decision.reason === 'cost-exceeds-limit'
    ? isBlocked(decision)
      ? BLOCKED_DETAIL
      : NEVER_DETAIL
    : decision.reason === 'banned'
      ? bannedDetail(decision)
      : restoredDetail(waitSeconds(decision));

/** 503 when the store could not decide, else 429. */
export const problemStatus = (decision: Decision): 429 | 503 => (decision.reason === 'store-unavailable' ? 503 : 429);

/**
 * The response for a refused request. Over quota is a 429 naming the policies that refused.
 * A refusal because the store could not decide (`onStoreError: 'deny'`) is a 503 with the
 * reduced-capacity type instead, naming no policy, so clients and dashboards never mistake an
 * outage for abuse.
 */
export function problemFor(decision: Decision): RateLimitProblem {
  if (decision.reason === 'store-unavailable') {
    // No policy refused: the store could not say. Naming them would read as a client over quota.
    return {
      type: TEMPORARY_REDUCED_CAPACITY_TYPE,
      title: UNAVAILABLE_TITLE,
      status: 503,
      detail: UNAVAILABLE_DETAIL,
      'violated-policies': [],
    };
  }
  const violated = decision.policies.filter((p) => !p.allowed).map((p) => p.name);
  const banned = decision.reason === 'banned';
  return {
    type: banned ? ABNORMAL_USAGE_DETECTED_TYPE : QUOTA_EXCEEDED_TYPE,
    title: banned ? BANNED_TITLE : QUOTA_TITLE,
    status: 429,
    detail: detailOf(decision),
    'violated-policies': violated,
  };
}

/**
 * The problem document a refusal sends under `status`: the one built from parts when that is
 * the decision's own (`problemStatus`), else the same members under `status` (a `statusCode`
 * option, a ban's, what an adapter's `onLimited` set). A ban's detail is its own either way.
 */
export function problemBody(decision: Decision, status: number): string {
  return status === problemStatus(decision) && decision.reason !== 'banned'
    ? problemJson(decision)
    : JSON.stringify({ ...problemFor(decision), status });
}

/** `{"type":…,"title":…,"status":…,"detail":`, serialised once. */
const opening = (type: string, title: string, status: number): string =>
  `${JSON.stringify({ type, title, status }).slice(0, -1)},"detail":`;
const QUOTA_OPENING = opening(QUOTA_EXCEEDED_TYPE, QUOTA_TITLE, 429);
const neverMiddle = (detail: string): string => `${QUOTA_OPENING}${JSON.stringify(detail)},"violated-policies":`;
const NEVER_MIDDLE = neverMiddle(NEVER_DETAIL);
const BLOCKED_MIDDLE = neverMiddle(BLOCKED_DETAIL);
const UNAVAILABLE_BODY = `${opening(TEMPORARY_REDUCED_CAPACITY_TYPE, UNAVAILABLE_TITLE, 503)}${JSON.stringify(UNAVAILABLE_DETAIL)},"violated-policies":[]}`;

/**
 * `JSON.stringify(problemFor(decision))`, built from parts serialised once: the refusal is
 * sent under load, so it should cost no more than the headers of a request that passes.
 * Only the names of the refusing policies and the wait (digits only) vary.
 */
export function problemJson(decision: Decision): string {
  if (decision.reason === 'store-unavailable') return UNAVAILABLE_BODY;
  const violated = violatedOf(decision.policies);
  if (decision.reason === 'cost-exceeds-limit') return (isBlocked(decision) ? BLOCKED_MIDDLE : NEVER_MIDDLE) + violated;
  const seconds = waitSeconds(decision);
  if (violated !== lastViolated || seconds !== lastSeconds) {
    lastBody = `${QUOTA_OPENING}"${restoredDetail(seconds)}","violated-policies":${violated}`;
    lastViolated = violated;
    lastSeconds = seconds;
  }
  return lastBody;
}

// The last quota refusal's body, and what it was made of: a flood of refusals names the same
// policies with the same wait in whole seconds, and joining the text anew cost some 400
// instructions a refusal (the body sent again is also flat already).
let lastViolated = '';
let lastSeconds = -1;
let lastBody = '';

/** `[names of the refusing policies]}`: the document's last member and its end. */
function violatedOf(policies: Decision['policies']): string {
  const only = policies.length === 1 ? (policies[0] as Decision['policies'][number]) : undefined;
  if (only !== undefined && !only.allowed) return violatedOne(only.name);
  let violated = '[';
  for (const p of policies) {
    if (!p.allowed) violated += `${violated === '[' ? '' : ','}${JSON.stringify(p.name)}`;
  }
  return `${violated}]}`;
}

// The last one policy named, and its text: most refusals in a row name the same policy, and
// `JSON.stringify` enters the runtime (about 700 instructions a refusal).
let lastName = '';
let lastNamed = '[""]}';

function violatedOne(name: string): string {
  if (name !== lastName) {
    lastNamed = `[${JSON.stringify(name)}]}`;
    lastName = name;
  }
  return lastNamed;
}
