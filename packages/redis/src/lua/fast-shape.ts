/**
 * A table constructor with room for `size` entries, the first given: Lua sizes a table by its
 * constructor, and each doubling after that reallocates it.
 */
export const room = (size: number, first = 'nil') =>
  `{ ${[first, ...Array<string>(size - 1).fill('nil')].join(', ')} }`;

/** `text` with every line after the first indented by `indent`. */
export const indented = (text: string, indent: string): string => text.replaceAll('\n', `\n${indent}`);

/**
 * An algorithm with a straight-line path (`fast.ts`): its name as ARGV gives it, its state's
 * shape, and its decision written inline over locals the path names (a function would cost
 * Redis a call per policy, some 700 instructions).
 */
export interface FastAlgorithm {
  readonly name: string;
  readonly shape: FastShape;
  /**
   * Lua statements, one `do` block, deciding one policy from the locals `input` names (figures
   * as numbers, the state's own numbers, nil when fresh) and assigning those `output` names,
   * declared by the caller: allowed, remaining, reset, wait (delay if allowed, retry if not),
   * and when allowed the next state's numbers.
   */
  readonly decide: (input: DecisionInput, output: DecisionOutput) => string;
}

/** The locals a decision reads; `limit` and `maxDelay` only for an algorithm that `readsLimit`. */
export interface DecisionInput {
  readonly limit: string;
  readonly window: string;
  readonly maxDelay: string;
  readonly capacity: string;
  readonly cost: string;
  readonly now: string;
  readonly state: readonly string[];
}

/** The locals a decision assigns. */
export interface DecisionOutput {
  readonly ok: string;
  readonly remaining: string;
  readonly reset: string;
  readonly wait: string;
  readonly next: readonly string[];
}

/** Policy `suffix`'s locals, as both straight-line paths name them (`limit1`, `a1`, `ok1`, … or unnumbered). */
const decisionInput = (shape: FastShape, suffix: number | '', cost = 'cost'): DecisionInput => ({
  limit: `limit${suffix}`,
  window: `window${suffix}`,
  maxDelay: `max_delay${suffix}`,
  capacity: `capacity${suffix}`,
  cost,
  now: 'now',
  state: stateNumbers(shape, suffix),
});
const decisionOutput = (shape: FastShape, suffix: number | ''): DecisionOutput => ({
  ok: `ok${suffix}`,
  remaining: `remaining${suffix}`,
  reset: `reset${suffix}`,
  wait: `wait${suffix}`,
  next: nextNumbers(shape, suffix),
});

/** Policy `suffix`'s decision at the call's cost, its outcome declared as the locals `decisionOutput` names. */
export const decision = (algorithm: FastAlgorithm, suffix: number | ''): string => {
  const output = decisionOutput(algorithm.shape, suffix);
  const declared = [output.ok, output.remaining, output.reset, output.wait, ...output.next];
  return `local ${declared.join(', ')}\n${algorithm.decide(decisionInput(algorithm.shape, suffix), output)}`;
};

/**
 * The outcome as it stands, for a policy that would have allowed a refused decision: its
 * decision again at cost 0, into its remaining and reset, with a wait of 0.
 */
export const asItStands = (algorithm: FastAlgorithm, suffix: number | ''): string => {
  const { shape } = algorithm;
  const scratch = {
    ok: '_ok',
    remaining: `remaining${suffix}`,
    reset: `reset${suffix}`,
    wait: '_wait',
    next: nextNumbers(shape).map((name) => `_${name}`),
  };
  return [
    `local _ok, _wait, ${scratch.next.join(', ')}`,
    algorithm.decide(decisionInput(shape, suffix, '0'), scratch),
    `wait${suffix} = 0`,
  ].join('\n');
};

/** What the straight-line paths (`fast-unrolled.ts`, `fast-many.ts`) write differently for each algorithm. */
export interface FastShape {
  /** How many numbers of its own a state has, besides its units spent and reset time. */
  readonly size: 2 | 3;
  /**
   * Whether a charge may reset no later than the latest reset time the string holds (the
   * sliding window counter's, in the windows of its last charge), so that its write may keep
   * the key's TTL. Each state's stored reset time is then read with its own numbers.
   */
  readonly keepsTtl: boolean;
  /**
   * Whether its decision reads the limit and maxDelayMs (gcra's does; the counter's reads only
   * the window and capacity): only then does the path convert them from ARGV.
   */
  readonly readsLimit: boolean;
}

/** A read state's own numbers as locals, numbered for an unrolled policy: a, b[, c] (`a1, b1` for policy 1). */
export const stateNumbers = ({ size }: FastShape, suffix: number | '' = ''): string[] =>
  (size === 3 ? ['a', 'b', 'c'] : ['a', 'b']).map((name) => `${name}${suffix}`);

/** The next state's own numbers, as a decision assigns them: x, y[, z]. */
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
 * Whether a charge on Redis's clock may keep the key's TTL, from the locals `ttl` (the longest
 * reset the charge asks for), `min_ttl` (0 on Redis's clock) and `expiry` (the latest reset
 * time the string held, nil for no string): every write leaves a key lasting at least until
 * the latest reset time it holds, so a charge whose resets all fall by then needs no expiry.
 */
export const keepsTtlWhen = 'min_ttl == 0 and expiry ~= nil and now + ttl <= expiry';

/**
 * A charged state's numbers as one `struct.pack` writes them, each a Lua expression: their
 * format, the format of the whole string (the directory, then the numbers), and the numbers.
 */
export interface PackedNumbers {
  readonly format: string;
  readonly withDirectory: string;
  readonly values: string;
}

/**
 * The write of a charged state to `key`: the directory and the packed `numbers`, with the
 * locals `ttl` and, for an algorithm whose charge may keep the key's TTL (`keepsTtl`),
 * `keeps_ttl` (`keepsTtlWhen`): the key then keeps its TTL and Redis sets no expiry. (A key
 * written on an injected clock that runs ahead of Redis's expires that much early, and keeps
 * doing so: the README's Expiry says so.) Such a charge found the string holding exactly this
 * directory, so it overwrites only the numbers, by SETRANGE at `numbers_at` (the figures
 * entry gives it as text: `offsetText` in figures.ts): the script then makes no string of the
 * whole state, which Redis's Lua would hash byte by byte.
 */
export const chargeWrite = (shape: FastShape, key: string, numbers: PackedNumbers, indent: string): string => {
  // 'c0' packs a string whole: the directory and the numbers make one string, where packing
  // the numbers and then joining the directory to them would make two.
  const write = `redis.call('PSETEX', ${key}, format('%d', ttl), struct.pack(${numbers.withDirectory}, directory, ${numbers.values}))`;
  if (!shape.keepsTtl) return write;
  return [
    'if keeps_ttl then',
    `  redis.call('SETRANGE', ${key}, numbers_at, struct.pack(${numbers.format}, ${numbers.values}))`,
    'else',
    `  ${write}`,
    'end',
  ].join(`\n${indent}`);
};
