import { type Policy, SluiceError, type StoreRequest } from '@sluice/core';
import { MAX_POLICIES } from './commands.js';

/** `all`: one of a call's decisions that are charged all or none (see the scripts' header). */
export type Operation = 'consume' | 'refund' | 'all';

/**
 * Text forms built once per list: a limiter passes the same policy list every time, and the
 * same capacity list too unless elastic throttling computes a new one.
 */
const policySets = new WeakMap<readonly Policy[], string>();
const capacityLists = new WeakMap<readonly number[], string>();

/**
 * One decision's five ARGV entries, as the scripts' header describes them. Every number is
 * checked to be a whole number below 2^53: the script stores state with `%d`, which would
 * truncate a fraction, and the decision would then differ from the reference instead of failing.
 */
export function decisionArgs(operation: Operation, request: StoreRequest): string[] {
  const { now, cost, policies, capacities } = request;
  if (now !== undefined && !wholeNumber(now)) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_CLOCK',
      `[sluice] Redis store: the clock must return whole epoch milliseconds; received ${String(now)}.`,
    );
  }
  if (!wholeNumber(cost)) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_COST',
      `[sluice] A cost must be a whole number; received ${String(cost)}.`,
    );
  }
  if (capacities.length !== policies.length) throw badCapacities();
  return [now === undefined ? '' : String(now), operation, String(cost), policySet(policies), capacityList(capacities)];
}

function capacityList(capacities: readonly number[]): string {
  let text = capacityLists.get(capacities);
  if (text !== undefined) return text;
  if (!capacities.every(wholeNumber)) throw badCapacities();
  text = capacities.join(',');
  capacityLists.set(capacities, text);
  return text;
}

const badCapacities = () =>
  new SluiceError(
    'ERR_SLUICE_INVALID_POLICIES',
    '[sluice] Redis store: a request needs one whole capacity per policy.',
  );

/** The policy list as the scripts read it; throws a coded error for a list they cannot run. */
export function policySet(policies: readonly Policy[]): string {
  let text = policySets.get(policies);
  if (text !== undefined) return text;
  if (policies.length === 0 || policies.length > MAX_POLICIES) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_POLICIES',
      `[sluice] The Redis store decides 1 to ${MAX_POLICIES} policies at once; this limiter has ${policies.length}.`,
    );
  }
  text = policies.map(describe).join('');
  policySets.set(policies, text);
  return text;
}

function describe(policy: Policy): string {
  const numbers = [policy.limit, policy.windowMs, policy.maxDelayMs, policy.refillAmount, policy.refillIntervalMs];
  if (!numbers.every(wholeNumber) || !safeText.test(policy.slot) || !safeText.test(policy.version)) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_POLICIES',
      `[sluice] Redis store: policy ${JSON.stringify(policy.name)} is not one core built; make policies with createLimiter or toPolicy.`,
    );
  }
  return ` ${policy.slot}@${policy.version}=${policy.algorithm} ${numbers.join(' ')};`;
}

const safeText = /^[A-Za-z0-9._-]+$/;
const wholeNumber = (value: unknown): boolean => Number.isSafeInteger(value) && (value as number) >= 0;
