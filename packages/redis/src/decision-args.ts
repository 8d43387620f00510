import { chargeAgesMsOf, isEpochMs, type Policy, SluiceError, type StoreRequest } from '@sluice/core';
import { MAX_POLICIES } from './commands.js';
import { figureText, offsetText } from './figures.js';
import { DIRECTORY_MARKS } from './lua/prelude.js';

/** `all`: one of a call's decisions that are charged all or none (see the scripts' header). */
export type Operation = 'consume' | 'refund' | 'all';

/**
 * Argument forms built once per list: a limiter passes the same policy list every time, and the
 * same capacity list too unless elastic throttling computes a new one.
 */
const policyArgs = new WeakMap<readonly Policy[], Described>();
const figureArgs = new WeakMap<readonly number[], { readonly policies: readonly Policy[]; readonly text: string }>();

/** A policy list as the scripts read it: its kinds (for the run's header) and its heads. */
interface Described {
  readonly kinds: string;
  readonly heads: string;
}

/**
 * One decision's three ARGV entries, as the scripts' header describes them: the run's header
 * without its count ('<op> <cost> <kinds>[ <now>][ <charge age>[ <span>]]', see `runHeader`), the policies' heads, and
 * their figures (`figures.ts`). Three entries for any number of policies: Redis makes a string
 * of each entry on every call. Every number is checked to be a whole number below 2^53: the
 * script stores state with `%d`, which would truncate a fraction, and the decision would then
 * differ from the reference instead of failing.
 */
export function decisionArgs(operation: Operation, request: StoreRequest): readonly string[] {
  const { now, cost, policies, capacities } = request;
  if (now !== undefined && !isEpochMs(now)) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_CLOCK',
      `[sluice] Redis store: the clock must return whole epoch milliseconds from 0 to 2^50; received ${String(now)}.`,
    );
  }
  // When a refund's charge was made (how long ago, within what span): the script gives back only
  // what it still holds.
  const { age, span } = operation === 'refund' ? chargeAgesMsOf(request) : CHARGED_NOW;
  const dated = age > 0 || span > 0;
  // A limiter on Redis's clock sends the same arguments every time: the last list serves
  // again, and the batcher then sees a run of decisions by the list's identity alone.
  if (
    now === undefined &&
    !dated &&
    operation === last.operation &&
    cost === last.cost &&
    policies === last.policies &&
    capacities === last.capacities
  ) {
    return last.args;
  }
  if (!wholeNumber(cost)) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_COST',
      `[sluice] A cost must be a whole number; received ${String(cost)}.`,
    );
  }
  const { kinds, heads } = policyList(policies);
  const header = `${operation} ${cost} ${kinds}${now === undefined ? '' : ` ${now}`}`;
  const args = [
    dated ? `${header}${now === undefined ? ' ' : ''} ${age}${span > 0 ? ` ${span}` : ''}` : header,
    heads,
    figuresOf(policies, capacities, heads),
  ];
  if (now === undefined && !dated) last = { operation, cost, policies, capacities, args };
  return args;
}

const CHARGED_NOW = { age: 0, span: 0 };

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
 * made ('<count> <op> <cost> <kinds>[ <now>][ <charge age>[ <span>]]'): the script gets those arguments once, and the
 * usual header ('1 consume 1 gcra') is one the script compares whole.
 */
export function runHeader(count: number, args: readonly string[]): string {
  return `${count} ${args[0] as string}`;
}

/**
 * The figures entry: per policy its windowMs and capacity, then per policy its limit and
 * maxDelayMs, so a script whose decision needs only the first two reads only those; the
 * limits and maxDelayMs are left out when every limit is its capacity and every maxDelayMs 0
 * (`SHORT_FIGURES`). Last, where a state's numbers start in a client's string of these
 * policies' states (`offsetText`): the directory is the heads between its marks.
 */
function figuresOf(policies: readonly Policy[], capacities: readonly number[], heads: string): string {
  const known = figureArgs.get(capacities);
  if (known?.policies === policies) return known.text;
  if (capacities.length !== policies.length || !capacities.every(wholeNumber)) throw badCapacities();
  const short = policies.every((policy, i) => policy.limit === capacities[i] && policy.maxDelayMs === 0);
  const text =
    policies.map((policy, i) => figureText(policy.windowMs) + figureText(capacities[i] as number)).join('') +
    (short ? '' : policies.map((policy) => figureText(policy.limit) + figureText(policy.maxDelayMs)).join('')) +
    offsetText(heads.length + DIRECTORY_MARKS);
  figureArgs.set(capacities, { policies, text });
  return text;
}

const badCapacities = () =>
  new SluiceError(
    'ERR_SLUICE_INVALID_POLICIES',
    '[sluice] Redis store: a request needs one whole capacity per policy.',
  );

/** A policy list's kinds and heads as the scripts read them; throws a coded error for a list they cannot run. */
export function policyList(policies: readonly Policy[]): Described {
  let described = policyArgs.get(policies);
  if (described !== undefined) return described;
  if (policies.length === 0 || policies.length > MAX_POLICIES) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_POLICIES',
      `[sluice] The Redis store decides 1 to ${MAX_POLICIES} policies at once; this limiter has ${policies.length}.`,
    );
  }
  for (const policy of policies) check(policy);
  described = {
    kinds: policies.map(kindOf).join(','),
    heads: policies.map((policy) => ` ${policy.slot}@${policy.version}=`).join(''),
  };
  policyArgs.set(policies, described);
  return described;
}

function check(policy: Policy): void {
  const { limit, windowMs, maxDelayMs, refillAmount, refillIntervalMs } = policy;
  const numbers = [limit, windowMs, maxDelayMs, refillAmount, refillIntervalMs];
  if (!numbers.every(wholeNumber) || !safeText.test(policy.slot) || !safeText.test(policy.version)) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_POLICIES',
      `[sluice] Redis store: policy ${JSON.stringify(policy.name)} is not one core built; make policies with createLimiter or toPolicy.`,
    );
  }
}

/** The algorithm's name; a token bucket refilled at intervals adds its figures ('token-bucket:5:1000'). */
const kindOf = ({ algorithm, refillAmount, refillIntervalMs }: Policy): string =>
  refillIntervalMs > 0 ? `${algorithm}:${refillAmount}:${refillIntervalMs}` : algorithm;

const safeText = /^[A-Za-z0-9._-]+$/;
const wholeNumber = (value: unknown): boolean => Number.isSafeInteger(value) && (value as number) >= 0;
