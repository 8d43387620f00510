import { algorithmNames } from './algorithms/index.js';
import { formatMs, toMs } from './duration.js';
import { describe, invalid, SluiceError } from './errors.js';
import { checkKnownOptions, POLICY_OPTION_NAMES } from './known-options.js';
import { PEER_OPTION_NAMES } from './peer-option-names.js';
import { internalized } from './shared-text.js';
import { MAX_TIMER_MS } from './timer.js';
import type { AlgorithmName, Policy, PolicyOptions } from './types.js';

const bucketAlgorithms: ReadonlySet<AlgorithmName> = new Set(['token-bucket', 'leaky-bucket', 'gcra']);
const queueAlgorithms: ReadonlySet<AlgorithmName> = new Set(['leaky-bucket', 'gcra']);
const codes: Record<AlgorithmName, string> = {
  'token-bucket': 'tb',
  'leaky-bucket': 'lb',
  gcra: 'gc',
  'fixed-window': 'fw',
  'sliding-window-log': 'sl',
  'sliding-window-counter': 'sc',
};
const namePattern = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/**
 * The most a policy's capacity or limit times its window (ms) may be: products of a capacity
 * and a window must stay exact in a double, in JS and in Redis Lua, even with 1000 % overage on
 * top (× 11 < 2^4). A limit set from outside (a decision service's override) is held to it too.
 */
export const MAX_UNITS = 2 ** 49;

export const DEFAULT_ALGORITHM: AlgorithmName = 'sliding-window-counter';

/** Validates policy options and applies every default. Throws `ERR_SLUICE_*` on the first problem. */
export function toPolicy(options: PolicyOptions, path: string): Policy {
  if (typeof options !== 'object' || options === null) {
    invalid('ERR_SLUICE_INVALID_POLICIES', path, options, 'an object with `limit` and `window`');
  }
  // Every unknown name at once, each with sluice's name for a peer's (`max`: `limit`) or the closest.
  checkKnownOptions(options, POLICY_OPTION_NAMES, PEER_OPTION_NAMES, path);
  const algorithm = options.algorithm === undefined ? DEFAULT_ALGORITHM : options.algorithm;
  if (!algorithmNames.includes(algorithm)) {
    invalid('ERR_SLUICE_UNKNOWN_ALGORITHM', `${path}.algorithm`, algorithm, `one of ${algorithmNames.join(', ')}`);
  }
  const limit = positiveInteger(options.limit, `${path}.limit`, 'ERR_SLUICE_INVALID_LIMIT');
  const windowMs = toMs(options.window, `${path}.window`);
  const isBucket = bucketAlgorithms.has(algorithm);
  if (options.burst !== undefined && !isBucket) {
    invalid(
      'ERR_SLUICE_INVALID_BURST',
      `${path}.burst`,
      options.burst,
      'left out: only token-bucket, leaky-bucket and gcra have a burst',
    );
  }
  const capacity =
    options.burst === undefined ? limit : positiveInteger(options.burst, `${path}.burst`, 'ERR_SLUICE_INVALID_BURST');
  const maxDelayMs = queueDelay(options.queue, algorithm, `${path}.queue`);
  const [refillAmount, refillIntervalMs] = refill(options, algorithm, limit, path);
  // The policy's name and its RateLimit fields say `limit` per `window`: a refill at another
  // rate would admit what they do not say (10 an hour refilled 1 a second admits 3,600 an hour).
  if (refillIntervalMs > 0 && refillAmount * windowMs !== limit * refillIntervalMs) {
    invalid(
      'ERR_SLUICE_INVALID_REFILL',
      `${path}.refillInterval`,
      options.refillInterval,
      `at the rate limit per window says: refillAmount × window equal to limit × refillInterval (${refillAmount} × ${windowMs} ms is not ${limit} × ${refillIntervalMs} ms)`,
    );
  }
  // Each product kept exact in a double, named by the option that makes it too large.
  if (limit * windowMs > MAX_UNITS) {
    invalid(
      'ERR_SLUICE_INVALID_WINDOW',
      `${path}.window`,
      options.window,
      `short enough that limit × window stays at most 2^49 (or the limit smaller); ${limit} × ${windowMs} ms is too large`,
    );
  }
  if (capacity * windowMs > MAX_UNITS) {
    invalid(
      'ERR_SLUICE_INVALID_BURST',
      `${path}.burst`,
      options.burst,
      `small enough that burst × window stays at most 2^49; ${capacity} × ${windowMs} ms is too large`,
    );
  }
  if (maxDelayMs * limit > MAX_UNITS) {
    invalid(
      'ERR_SLUICE_INVALID_QUEUE',
      `${path}.queue`,
      options.queue,
      `a maxDelayMs short enough that maxDelayMs × limit stays at most 2^49; ${maxDelayMs} ms × ${limit} is too large`,
    );
  }
  // The longest wait of a stepped bucket, empty to full: held to the same bound as a window.
  const refills = refillIntervalMs > 0 ? Math.ceil(capacity / refillAmount) : 0;
  if (refills * refillIntervalMs > MAX_UNITS) {
    invalid(
      'ERR_SLUICE_INVALID_REFILL',
      `${path}.refillInterval`,
      options.refillInterval,
      `short enough that the time to refill the bucket from empty stays at most 2^49 ms; ${refills} refills × ${refillIntervalMs} ms is too long`,
    );
  }
  const given = options.name === undefined ? `${limit}-per-${formatMs(windowMs)}` : options.name;
  if (typeof given !== 'string' || !namePattern.test(given)) {
    invalid(
      'ERR_SLUICE_INVALID_POLICY_NAME',
      `${path}.name`,
      given,
      '1 to 64 letters, digits, `.`, `_` or `-`, starting with a letter or digit',
    );
  }
  // V8's one shared copy of the name: metrics compare it on every decision.
  const name = internalized(given);
  // The id changes whenever the stored state's meaning would, so old state is never misread.
  const unit = refillIntervalMs > 0 ? `i${refillIntervalMs}` : `${windowMs}`;
  const id = `${name}.${codes[algorithm]}${unit}`;
  const slot = options.name === undefined ? '_0' : name;
  // Every Redis client string and sync key carries it: a capacity equal to the limit and no
  // interval refill, the usual policy, leave their three figures out (a version of three
  // figures and one of six are never equal, so no two meanings share one).
  const usual = capacity === limit && refillAmount === 0 && refillIntervalMs === 0;
  const figures = usual ? [limit, windowMs] : [limit, windowMs, capacity, refillAmount, refillIntervalMs];
  const version = [codes[algorithm], ...figures].join('.');
  return { name, id, slot, version, algorithm, limit, windowMs, capacity, maxDelayMs, refillAmount, refillIntervalMs };
}

/**
 * The policies of a limiter: either `policies`, or one policy from the top-level `limit`,
 * `window`, … options. Given both, the top-level ones would be ignored, so that throws.
 */
export function limiterPolicies(options: Record<string, unknown>): Policy[] {
  const single = Object.fromEntries(
    POLICY_OPTION_NAMES.flatMap((k) => (options[k] === undefined ? [] : [[k, options[k]]])),
  );
  if (options.policies !== undefined) {
    const clash = Object.keys(single)[0];
    if (clash !== undefined) {
      throw new SluiceError(
        'ERR_SLUICE_CONFLICTING_OPTIONS',
        `[sluice] Option \`${clash}\` cannot be combined with \`policies\`; put it inside each policy instead.`,
      );
    }
    return toPolicies(options.policies);
  }
  if (single.limit === undefined && single.window === undefined) {
    throw new SluiceError(
      'ERR_SLUICE_INVALID_POLICIES',
      '[sluice] Give either `limit` and `window`, or `policies: [{ limit, window }, …]`.',
    );
  }
  return [toPolicy(single as unknown as PolicyOptions, 'options')];
}

/** Validates the policy set of one limiter: non-empty, and names unique. */
export function toPolicies(list: unknown): Policy[] {
  if (!Array.isArray(list) || list.length === 0) {
    invalid('ERR_SLUICE_INVALID_POLICIES', 'policies', list, 'a non-empty array of policies');
  }
  // An unnamed policy keeps its state under its position, which a new limit leaves alone.
  // Array.from visits holes too (`[, p]`), which `map` skips, leaving them to fail uncoded later.
  const policies = Array.from(list as PolicyOptions[], (options, i) => {
    const policy = toPolicy(options, `policies[${i}]`);
    return options.name === undefined ? { ...policy, slot: `_${i}` } : policy;
  });
  const seen = new Set<string>();
  for (const policy of policies) {
    if (seen.has(policy.name)) {
      throw new SluiceError(
        'ERR_SLUICE_DUPLICATE_POLICY',
        `[sluice] Two policies are named ${describe(policy.name)}; give each policy a unique \`name\`.`,
      );
    }
    seen.add(policy.name);
  }
  return policies;
}

function positiveInteger(
  value: unknown,
  option: string,
  code: 'ERR_SLUICE_INVALID_LIMIT' | 'ERR_SLUICE_INVALID_BURST' | 'ERR_SLUICE_INVALID_REFILL',
): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    invalid(code, option, value, 'a positive whole number');
  }
  return value;
}

function queueDelay(queue: PolicyOptions['queue'], algorithm: AlgorithmName, option: string): number {
  if (queue === undefined) return 0;
  if (!queueAlgorithms.has(algorithm)) {
    invalid('ERR_SLUICE_INVALID_QUEUE', option, queue, 'left out: queue mode needs algorithm leaky-bucket or gcra');
  }
  if (
    typeof queue !== 'object' ||
    queue === null ||
    Array.isArray(queue) ||
    !('maxDelayMs' in queue) ||
    Object.keys(queue).some((k) => k !== 'maxDelayMs')
  ) {
    invalid('ERR_SLUICE_INVALID_QUEUE', option, queue, "an object `{ maxDelayMs }` such as `{ maxDelayMs: '2s' }`");
  }
  const maxDelayMs = toMs(queue.maxDelayMs, `${option}.maxDelayMs`);
  // A queued request is held with a timer, which Node fires after 1 ms when set any longer.
  if (maxDelayMs > MAX_TIMER_MS) {
    invalid(
      'ERR_SLUICE_INVALID_QUEUE',
      `${option}.maxDelayMs`,
      queue.maxDelayMs,
      'at most 2^31 − 1 ms (about 24.8 days)',
    );
  }
  return maxDelayMs;
}

function refill(options: PolicyOptions, algorithm: AlgorithmName, limit: number, path: string): [number, number] {
  if (options.refillAmount === undefined && options.refillInterval === undefined) return [0, 0];
  if (algorithm !== 'token-bucket') {
    const given = options.refillInterval === undefined ? 'refillAmount' : 'refillInterval';
    invalid(
      'ERR_SLUICE_INVALID_REFILL',
      `${path}.${given}`,
      options[given],
      'left out: interval refill needs algorithm token-bucket',
    );
  }
  if (options.refillInterval === undefined) {
    invalid('ERR_SLUICE_INVALID_REFILL', `${path}.refillInterval`, undefined, 'set together with refillAmount');
  }
  const amount =
    options.refillAmount === undefined
      ? limit
      : positiveInteger(options.refillAmount, `${path}.refillAmount`, 'ERR_SLUICE_INVALID_REFILL');
  return [amount, toMs(options.refillInterval, `${path}.refillInterval`)];
}
