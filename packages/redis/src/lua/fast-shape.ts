/** What the straight-line paths (`fast-unrolled.ts`, `fast-many.ts`) write differently for each algorithm. */
export interface FastShape {
  /** How many numbers of its own a state has, besides its units spent and reset time. */
  readonly size: 2 | 3;
  /**
   * Whether a charge may reset no later than the stored state (the sliding window counter's,
   * in the window of its last charge), so that its write may keep the key's TTL. Its
   * stored reset time is then read with the state's own numbers.
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

/**
 * The locals one `struct.unpack` reads a state into, in the state's order: its own numbers,
 * `_` for what the path does not read (the third of a state of two, the units spent, and the
 * reset time unless the write may keep the key's TTL, when it is `stored`).
 */
export const unpacked = (shape: FastShape, suffix: number | '' = ''): string[] => [
  ...stateNumbers(shape, suffix),
  ...(shape.size === 2 ? ['_'] : []),
  '_',
  shape.keepsTtl ? `stored${suffix}` : '_',
];

/** What a read keeps of a state: its numbers, then the stored reset time if kept. */
export const kept = (shape: FastShape, suffix: number | '' = ''): string[] =>
  unpacked(shape, suffix).filter((name) => name !== '_');

/** The numbers a charged state is packed from, in the state's order (`unpacked`). */
export const packed = (shape: FastShape, used: string, resetAt: string, suffix: number | '' = ''): string[] => [
  ...nextNumbers(shape, suffix),
  ...(shape.size === 2 ? ['0'] : []),
  used,
  resetAt,
];

/**
 * Whether a charge resetting at `resetAt` resets no later than the stored reset time
 * (`stored`, a number or nil): what each policy must meet for the write to keep the key's TTL.
 */
export const resetsNoLater = (stored: string, resetAt: string): string =>
  `${stored} ~= nil and ${stored} >= ${resetAt}`;

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
