/** What the straight-line paths (`fast-unrolled.ts`, `fast-many.ts`) write differently for each algorithm. */
export interface FastShape {
  /** How many numbers of its own a state has, besides its units spent and reset time. */
  readonly size: 2 | 3;
  /**
   * Whether a charge may reset no later than the stored state (the sliding window counter's,
   * in the window of its last charge), so that its write may keep the key's TTL. Its
   * `FAST_STATE` then captures the reset time after the state's own numbers.
   */
  readonly keepsTtl: boolean;
  /**
   * Whether its `fast_evaluate` reads the limit and maxDelayMs (gcra's does; the counter's
   * reads only the window and capacity): a batch then converts them once for its decisions.
   */
  readonly readsLimit: boolean;
}

/** A read state's own numbers as locals, numbered for an unrolled policy: a, b[, c] (`a1, b1` for policy 1). */
export const stateNumbers = ({ size }: FastShape, suffix: number | '' = ''): string[] =>
  (size === 3 ? ['a', 'b', 'c'] : ['a', 'b']).map((name) => `${name}${suffix}`);

/** The next state's own numbers, as `fast_evaluate` returns them: x, y[, z]. */
export const nextNumbers = ({ size }: FastShape, suffix: number | '' = ''): string[] =>
  (size === 3 ? ['x', 'y', 'z'] : ['x', 'y']).map((name) => `${name}${suffix}`);

/** The locals one pattern cuts a state into: its numbers, then the stored reset time if kept. */
export const captures = (shape: FastShape, suffix: number | '' = ''): string[] => [
  ...stateNumbers(shape, suffix),
  ...(shape.keepsTtl ? [`stored${suffix}`] : []),
];

/**
 * Whether a charge resetting at `resetAt` resets no later than the stored reset time
 * (`stored`, text or nil): what each policy must meet for the write to keep the key's TTL.
 */
export const resetsNoLater = (stored: string, resetAt: string): string =>
  `${stored} ~= nil and ${stored} + 0 >= ${resetAt}`;

/** Read numbers converted from text, each once. */
export const converted = (numbers: readonly string[]): string => numbers.map((n) => `${n} + 0`).join(', ');

/**
 * The write of a charged state `value` to `key`, with the locals `ttl` and, for an algorithm
 * whose charge may reset no later than the stored state (`keepsTtl`), `keeps_ttl`: whether
 * this one does, on Redis's own clock, for every policy. A key written on Redis's clock lasts
 * at least until the latest reset time it holds (every write sees to it), so the key then
 * keeps its TTL and Redis sets no expiry. (A key written on an injected clock that runs ahead
 * of Redis's expires that much early, and keeps doing so: the README's Expiry says so.)
 * KEEPTTL came in Redis 6.0; REDIS_VERSION_NUM, in 7.0, tells a script it is there.
 */
export const chargeWrite = (shape: FastShape, key: string, value: string, indent: string): string => {
  const write = `redis.call('PSETEX', ${key}, format('%d', ttl), ${value})`;
  if (!shape.keepsTtl) return write;
  return [
    'if keeps_ttl and redis.REDIS_VERSION_NUM then',
    `  redis.call('SET', ${key}, ${value}, 'KEEPTTL')`,
    'else',
    `  ${write}`,
    'end',
  ].join(`\n${indent}`);
};
