import { figureLua, figuresFormat, OFFSET_FORMAT, sendsAllFiguresLua } from '../figures.js';
import {
  asItStands,
  chargeWrite,
  decision,
  type FastAlgorithm,
  type FastShape,
  indented,
  keepsTtlWhen,
  kept,
  packed,
  room,
  unpacked,
} from './fast-shape.js';
import {
  directoryOf,
  MAX_KEYS_PER_CALL,
  REPLY_NUMBERS,
  STATE_BYTES,
  signedWaitLua,
  soundNumbersLua,
  statesFormat,
  stringFormat,
} from './prelude.js';

/**
 * Decisions of up to this many policies are written out per policy count, in locals; more
 * policies take the loop of `fast-many.ts`. Each count's block is its own scope, and four
 * policies stay far below what Lua lets one function hold (a block of ten passes its 250
 * registers, of twelve its 200 locals); limiters rarely hold more than a second, a minute, an
 * hour and a day. The blocks double each script's text, which Redis compiles once.
 */
export const UNROLLED_POLICIES = 4;

/** The policy numbers 1 to `count`. */
const numbered = (count: number): number[] => Array.from({ length: count }, (_, index) => index + 1);

/** Everything read from a client's string, in one flat list of locals. */
const readOf = (shape: FastShape, count: number): string[] => numbered(count).flatMap((i) => kept(shape, i));

/**
 * Each policy's figures, read from ARGV once per call by one unpack (the limit and maxDelayMs
 * only by an algorithm whose decision reads them: they come after every window and capacity,
 * and a short entry leaves them out), where a state's numbers start in the string (for a
 * charge that writes only the numbers), and the directory of a string holding exactly these
 * policies' states.
 */
const figures = (shape: FastShape, count: number): string[] => {
  const own = numbered(count).flatMap((i) => [`window${i}`, `capacity${i}`]);
  const limits = numbered(count).flatMap((i) => [`limit${i}`, `max_delay${i}`]);
  // A charge that may keep the key's TTL writes only the numbers, at the offset the entry ends with.
  const offset = shape.keepsTtl;
  // The unpack's numbers, two halves a figure, into locals of their own (`_` for a figure the
  // decision does not read), then the offset as `at`.
  const read = (names: readonly string[], kept: readonly string[]) => {
    const halves = names.map((name, k) => (kept.includes(name) ? `f${k}, g${k}` : '_, _'));
    const format = figuresFormat(names.length) + (offset ? OFFSET_FORMAT : '');
    return `    local ${[...halves, ...(offset ? ['at'] : [])].join(', ')} = struct.unpack('${format}', figures)`;
  };
  // The figures the decision reads, made of their halves, and `numbers_at`.
  const decode = (names: readonly string[], kept: readonly string[]) => {
    const decoded = kept.map((name) => figureLua(`f${names.indexOf(name)}`, `g${names.indexOf(name)}`));
    const targets = [...kept, ...(offset ? ['numbers_at'] : [])];
    return `    ${targets.join(', ')} =\n      ${[...decoded, ...(offset ? ['at'] : [])].join(',\n      ')}`;
  };
  const full = [...own, ...limits];
  const used = shape.readsLimit ? full : own;
  // The unpacked halves live in a block of their own, so they take no registers after it.
  return [
    `local ${[...used, ...(offset ? ['numbers_at'] : [])].join(', ')}`,
    'do',
    '  local figures = ARGV[3]',
    `  if ${sendsAllFiguresLua('figures', String(count))} then`,
    read(full, used),
    decode(full, used),
    '  else',
    read(own, own),
    decode(own, own),
    ...(shape.readsLimit ? numbered(count).map((i) => `    limit${i}, max_delay${i} = capacity${i}, 0`) : []),
    '  end',
    'end',
    `local directory = ${directoryOf(['ARGV[2]'])}`,
  ];
};

/**
 * Whether `text`, a client's string, holds exactly these policies' states, in order: it starts
 * with their directory, and their numbers fill the rest. Any other string (another version's
 * states, a dropped policy's, sluice's earlier text layout) is the general body's.
 */
const fits = (count: number): string =>
  `find(text, directory, 1, true) == 1 and #text == #directory + ${STATE_BYTES * count}`;

/**
 * Reads the numbers of a string that `fits` into the locals `readOf` names, by one
 * `struct.unpack`; a damaged string's (`soundNumbersLua`) are dropped, so its client decides
 * as fresh and a charge writes the string whole.
 */
const unpackStates = (shape: FastShape, count: number): string => {
  const read = readOf(shape, count);
  return [
    'local _',
    `${numbered(count)
      .flatMap((i) => unpacked(shape, i))
      .join(', ')} = struct.unpack('${statesFormat(count)}', text, #directory + 1)`,
    `local sum = ${read.join(' + ')}`,
    `if not (${soundNumbersLua(read)}) then ${read.join(', ')} = ${read.map(() => 'nil').join(', ')} end`,
  ].join('\n');
};

/**
 * One decision over the read locals, for the client key `key`: every policy is charged only
 * if all allow, in one write of the whole string; a refused decision reports each policy that
 * would have allowed as it stands. A charge leaves these algorithms a reset above 0 (a gcra
 * TAT ahead, a counter's unit in this window), so the string keeps every state and is never
 * deleted, as the general body would a state back to fresh.
 */
const decide = (algorithm: FastAlgorithm, count: number): string => {
  const { shape } = algorithm;
  const policies = numbered(count);
  const all = (each: (i: number) => string, separator: string) => policies.map(each).join(separator);
  // The latest reset time the string held: each state's, the greatest.
  const keepsTtl = shape.keepsTtl
    ? [
        '    local expiry = stored1',
        ...policies.slice(1).map((i) => `    if expiry and stored${i} > expiry then expiry = stored${i} end`),
        `    local keeps_ttl = ${keepsTtlWhen}`,
      ]
    : [];
  // With one policy a refused decision has no policy that would have allowed.
  const refused =
    count === 1
      ? []
      : [
          'elseif cost > 0 then',
          ...policies.map((i) => `  if ok${i} then\n    ${indented(asItStands(algorithm, i), '    ')}\n  end`),
        ];
  return [
    ...policies.map((i) => decision(algorithm, i)),
    `if ${all((i) => `ok${i}`, ' and ')} then`,
    '  if cost > 0 then',
    `    local ${all((i) => `used${i}`, ', ')}, ttl = ${all((i) => `capacity${i} - remaining${i}`, ', ')}, min_ttl`,
    ...policies.map(
      (i) => `    if used${i} < 1 then used${i} = 1 end\n    if reset${i} > ttl then ttl = reset${i} end`,
    ),
    ...keepsTtl,
    // Each state with its units spent and when it fully resets (what another version reads),
    // after the directory, by one pack.
    `    ${chargeWrite(
      shape,
      'key',
      {
        format: `'${statesFormat(count)}'`,
        withDirectory: `'${stringFormat(count)}'`,
        values: all((i) => packed(shape, `used${i}`, `now + reset${i}`, i).join(', '), ', '),
      },
      '    ',
    )}`,
    '  end',
    ...refused,
    'end',
  ].join('\n');
};

/** Each policy's outcome as the reply carries it (`REPLY_NUMBERS`). */
const outcomes = (count: number): string =>
  numbered(count)
    .map((i) => `remaining${i}, reset${i}, ${signedWaitLua(`ok${i}`, `wait${i}`)}`)
    .join(',\n  ');

/** One decision: the client's string read, decided, written, and the reply packed. */
const oneDecision = (algorithm: FastAlgorithm, count: number): string => `
local key = KEYS[1]
local text, ${readOf(algorithm.shape, count).join(', ')} = redis.pcall('GET', key)
-- A value of another type at the key (an error reply): no state, overwritten by a charge, as
-- the batch's MGET reads it.
if text and text.err then text = false end
if text then
  if not (${fits(count)}) then return general() end
  ${indented(unpackStates(algorithm.shape, count), '  ')}
end
${decide(algorithm, count)}
return struct.pack('<d${'d'.repeat(REPLY_NUMBERS * count)}', redis_now,
  ${outcomes(count)})`;

/** A call of more decisions than this makes its reply's table whole at once (see `batch`). */
const WHOLE_REPLY_TABLE_ABOVE = 8;

/**
 * A batch: every client's string checked before the first decision writes, each client at
 * most once; each string's numbers are read as its decision comes (kept in a table between
 * the two, they cost a call of 32 three-policy decisions a tenth of its instructions, the
 * table growing as it filled). A call of more than `WHOLE_REPLY_TABLE_ABOVE` decisions makes
 * its reply's table with room for a full call's outcomes, so that none of them grows it: in a
 * call of 32 three-policy decisions growing cost each decision 1k instructions of 42k, while
 * for a call of two the constructor's slots cost each 3k more than growing did.
 */
const batch = (algorithm: FastAlgorithm, count: number): string => {
  const perDecision = REPLY_NUMBERS * count;
  const replySlots = numbered(perDecision)
    .map((k) => `reply[n + ${k}]`)
    .join(', ');
  return `
local texts, seen = redis.call('MGET', unpack(KEYS, 1, decisions)), {}
for d = 1, decisions do
  local key, text = KEYS[d], texts[d]
  if seen[key] or text and not (${fits(count)}) then return general() end
  seen[key] = true
end
local reply, n = { redis_now }, 1
if decisions > ${WHOLE_REPLY_TABLE_ABOVE} then reply = ${room(1 + perDecision * MAX_KEYS_PER_CALL, 'redis_now')} end
for d = 1, decisions do
  local key, text, ${readOf(algorithm.shape, count).join(', ')} = KEYS[d], texts[d]
  if text then
    ${indented(unpackStates(algorithm.shape, count), '    ')}
  end
  ${indented(decide(algorithm, count), '  ')}
  ${replySlots} =
    ${indented(outcomes(count), '  ')}
  n = n + ${perDecision}
end
return struct.pack('<' .. string.rep('d', n), unpack(reply, 1, n))`;
};

/**
 * The block deciding the call's decisions, all over `count` policies of the script's
 * algorithm (see `fastLua`). Every figure, state and outcome a policy needs is a local of its
 * own, numbered, so a decision builds no table, runs no loop over policies and indexes
 * nothing but ARGV (and, in a batch, the states read before the first write). Redis runs
 * 21–24 % fewer instructions than under the loop of `fast-many.ts` for one decision of three
 * policies (gcra 138.5k → 109.3k a call, the sliding window counter 172.2k → 131.5k) and 5–9 %
 * fewer per decision in a batch of 32, of one policy or three (callgrind, `redis-benchmark`
 * replays of the calls the store sends, measured when states were text).
 */
export const unrolledLua = (algorithm: FastAlgorithm, count: number): string => `
${figures(algorithm.shape, count).join('\n')}
if decisions == 1 then${indented(oneDecision(algorithm, count), '  ')}
end
${batch(algorithm, count)}
`;
