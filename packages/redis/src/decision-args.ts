import { type Policy, SluiceError, type StoreRequest } from '@sluice/core';
import { MAX_POLICIES } from './commands.js';

/** `all`: one of a call's decisions that are charged all or none (see the scripts' header). */
export type Operation = 'consume' | 'refund' | 'all';

/**
 * Argument forms built once per list: a limiter passes the same policy list every time, and the
 * same capacity list too unless elastic throttling computes a new one.
 */
const policyArgs = new WeakMap<readonly Policy[], readonly string[]>();
const capacityArgs = new WeakMap<readonly number[], readonly string[]>();

/**
 * One decision's ARGV entries, as the scripts' header describes them: the run's header without
 * its count ('<op> <cost> <policy count>[ <now>]', see `runHeader`), five per policy, then one
 * capacity per policy. The policies' figures are entries of their own: a script converts each
 * it needs once and cuts no text but the header, once per run. Every number is checked to be
 * a whole number below 2^53: the script stores state with `%d`, which would truncate a
 * fraction, and the decision would then differ from the reference instead of failing.
 */
export function decisionArgs(operation: Operation, request: StoreRequest): readonly string[] {
  const { now, cost, policies, capacities } = request;
  // A limiter on Redis's clock sends the same arguments every time: the last list serves
  // again, and the batcher then sees a run of decisions by the list's identity alone.
  if (
    now === undefined &&
    operation === last.operation &&
    cost === last.cost &&
    policies === last.policies &&
    capacities === last.capacities
  ) {
    return last.args;
  }
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
  const entries = policyList(policies);
  const header = `${operation} ${cost} ${policies.length}`;
  const args = [now === undefined ? header : `${header} ${now}`, ...entries, ...capacityList(capacities)];
  if (now === undefined) last = { operation, cost, policies, capacities, args };
  return args;
}

/** The arguments `decisionArgs` made last for a request on Redis's clock, and what they were made of. */
let last: {
  readonly operation: Operation | undefined;
  readonly cost: number;
  readonly policies: readonly Policy[] | undefined;
  readonly capacities: readonly number[] | undefined;
  readonly args: readonly string[];
} = { operation: undefined, cost: 0, policies: undefined, capacities: undefined, args: [] };

/**
 * The header of a run of `count` decisions in a row that share the arguments `decisionArgs`
 * made ('<count> <op> <cost> <policy count>[ <now>]'): the script gets those arguments once,
 * and the header is one entry where five would each be a string Redis makes per call.
 */
export function runHeader(count: number, args: readonly string[]): string {
  return `${count} ${args[0] as string}`;
}

function capacityList(capacities: readonly number[]): readonly string[] {
  let args = capacityArgs.get(capacities);
  if (args !== undefined) return args;
  if (!capacities.every(wholeNumber)) throw badCapacities();
  args = capacities.map(String);
  capacityArgs.set(capacities, args);
  return args;
}

const badCapacities = () =>
  new SluiceError(
    'ERR_SLUICE_INVALID_POLICIES',
    '[sluice] Redis store: a request needs one whole capacity per policy.',
  );

/** Each policy's entries as the scripts read them; throws a coded error for a list they cannot run. */
export function policyList(policies: readonly Policy[]): readonly string[] {
  let args = policyArgs.get(policies);
  if (args !== undefined) return args;
  if (policies.length === 0 || policies.length > MAX_POLICIES) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_POLICIES',
      `[sluice] The Redis store decides 1 to ${MAX_POLICIES} policies at once; this limiter has ${policies.length}.`,
    );
  }
  args = policies.flatMap(describe);
  policyArgs.set(policies, args);
  return args;
}

function describe(policy: Policy): string[] {
  const { limit, windowMs, maxDelayMs, refillAmount, refillIntervalMs } = policy;
  const numbers = [limit, windowMs, maxDelayMs, refillAmount, refillIntervalMs];
  if (!numbers.every(wholeNumber) || !safeText.test(policy.slot) || !safeText.test(policy.version)) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_POLICIES',
      `[sluice] Redis store: policy ${JSON.stringify(policy.name)} is not one core built; make policies with createLimiter or toPolicy.`,
    );
  }
  // Only an interval refill adds figures to the name: every entry costs Redis a string.
  const kind = refillIntervalMs > 0 ? `${policy.algorithm} ${refillAmount} ${refillIntervalMs}` : policy.algorithm;
  return [` ${policy.slot}@${policy.version}=`, kind, String(limit), String(windowMs), String(maxDelayMs)];
}

const safeText = /^[A-Za-z0-9._-]+$/;
const wholeNumber = (value: unknown): boolean => Number.isSafeInteger(value) && (value as number) >= 0;
