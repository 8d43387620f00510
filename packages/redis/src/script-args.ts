import { type Policy, SluiceError, type StoreRequest } from '@sluice/core';

export type Operation = 'consume' | 'refund';

/**
 * ARGV as the scripts' header describes it. Every number is checked to be a whole number
 * below 2^53: Lua would truncate a fraction in its integer reply, and the decision would then
 * differ from the reference instead of failing.
 */
export function scriptArgs(operation: Operation, request: StoreRequest): string[] {
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
  if (policies.length === 0 || capacities.length !== policies.length || !capacities.every(wholeNumber)) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_POLICIES',
      '[sluice] Redis store: a request needs at least one policy and one whole capacity per policy.',
    );
  }
  const args = [operation, now === undefined ? '' : String(now), String(cost)];
  policies.forEach((policy: Policy, i) => {
    args.push(
      policy.algorithm,
      String(capacities[i]),
      String(policy.limit),
      String(policy.windowMs),
      String(policy.maxDelayMs),
      String(policy.refillAmount),
      String(policy.refillIntervalMs),
    );
  });
  return args;
}

const wholeNumber = (value: unknown): boolean => Number.isSafeInteger(value) && (value as number) >= 0;
