import type { Decision } from '../types.js';

/** The draft's problem type for a client over its quota (draft-11 §5.1). */
export const QUOTA_EXCEEDED_TYPE = 'https://iana.org/assignments/http-problem-types#quota-exceeded';
/** The draft's problem type for capacity the server cannot grant right now (draft-11 §5.2). */
export const TEMPORARY_REDUCED_CAPACITY_TYPE =
  'https://iana.org/assignments/http-problem-types#temporary-reduced-capacity';
export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** An RFC 9457 problem document with the draft's `violated-policies` member. */
export interface RateLimitProblem {
  type: string;
  title: string;
  status: number;
  detail: string;
  'violated-policies': string[];
}

/**
 * The response for a refused request. Over quota is a 429 naming the policies that refused.
 * A refusal because the store could not decide (`onStoreError: 'deny'`) is a 503 with the
 * reduced-capacity type instead, so clients and dashboards never mistake an outage for abuse.
 */
export function problemFor(decision: Decision): RateLimitProblem {
  const violated = decision.policies.filter((p) => !p.allowed).map((p) => p.name);
  if (decision.reason === 'store-unavailable') {
    return {
      type: TEMPORARY_REDUCED_CAPACITY_TYPE,
      title: 'Request limits cannot be checked right now',
      status: 503,
      detail: 'The rate-limit store is unavailable; retry shortly.',
      'violated-policies': violated,
    };
  }
  return {
    type: QUOTA_EXCEEDED_TYPE,
    title: 'Quota exceeded',
    status: 429,
    detail:
      decision.reason === 'cost-exceeds-limit'
        ? 'This request costs more quota units than the policy grants at once; it can never pass as it is.'
        : `Quota restored for this request in ${Math.ceil(decision.retryAfterMs / 1000)} s.`,
    'violated-policies': violated,
  };
}
