import {
  chargeWrite,
  type FastShape,
  kept,
  nextNumbers,
  packed,
  resetsNoLater,
  stateNumbers,
  unpacked,
} from './fast-shape.js';
import { directoryOf, STATE_BYTES, statesFormat } from './prelude.js';

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

/** `text` with every line after the first indented by `indent`. */
const indented = (text: string, indent: string): string => text.replaceAll('\n', `\n${indent}`);

/** Where policy `i`'s entries sit in ARGV (see the script's header): five each after the run's header, then the capacities. */
const argv = (i: number, count: number) => ({
  head: 5 * i - 3,
  name: 5 * i - 2,
  limit: 5 * i - 1,
  window: 5 * i,
  maxDelay: 5 * i + 1,
  capacity: 1 + 5 * count + i,
});

/** Everything read from a client's string, in one flat list of locals. */
const readOf = (shape: FastShape, count: number): string[] => numbered(count).flatMap((i) => kept(shape, i));

/** Policy `i`'s figures, as `fast_evaluate` takes them (limit and maxDelayMs as text or numbers). */
const figuresOf = (i: number): string => `limit${i}, window${i}, max_delay${i}, capacity${i}`;

/**
 * The name check, each policy's head and figures, read from ARGV once per call, and the
 * directory of a string holding exactly these policies' states. Limit and maxDelayMs stay
 * text: an algorithm converts the figures it reads, and a batch converts them once for all its
 * decisions.
 */
const figures = (count: number): string[] => [
  `if ${numbered(count)
    .map((i) => `ARGV[${argv(i, count).name}] ~= FAST_NAME`)
    .join(' or ')} then return general() end`,
  ...numbered(count).map((i) => {
    const at = argv(i, count);
    return `local head${i}, ${figuresOf(i)} = ARGV[${at.head}], ARGV[${at.limit}], ARGV[${at.window}] + 0, ARGV[${at.maxDelay}], ARGV[${at.capacity}] + 0`;
  }),
  `local directory = ${directoryOf(numbered(count).map((i) => `head${i}`))}`,
];

/**
 * Reads `text`, a client's string, into the locals `readOf` names: a string of exactly these
 * policies' states, in order, starts with their directory and holds their numbers after it,
 * all read by one `struct.unpack`. Any other string (another version's states, a dropped
 * policy's, sluice's earlier text layout) is the general body's.
 */
const readStates = (shape: FastShape, count: number): string =>
  [
    'local _',
    `if find(text, directory, 1, true) ~= 1 or #text ~= #directory + ${STATE_BYTES * count} then return general() end`,
    `${numbered(count)
      .flatMap((i) => unpacked(shape, i))
      .join(', ')} = struct.unpack('${statesFormat(count)}', text, #directory + 1)`,
  ].join('\n');

/**
 * One decision over the read locals, for the client key `key`: every policy is charged only
 * if all allow, in one write of the whole string; a refused decision reports each policy that
 * would have allowed as it stands. A charge leaves these algorithms a reset above 0 (a gcra
 * TAT ahead, a counter's unit in this window), so the string keeps every state and is never
 * deleted, as the general body would a state back to fresh.
 */
const decide = (shape: FastShape, count: number): string => {
  const policies = numbered(count);
  const state = (i: number) => stateNumbers(shape, i).join(', ');
  const all = (each: (i: number) => string, separator: string) => policies.map(each).join(separator);
  const keepsTtl = shape.keepsTtl
    ? [`    local keeps_ttl = min_ttl == 0 and ${all((i) => resetsNoLater(`stored${i}`, `now + reset${i}`), ' and ')}`]
    : [];
  // With one policy a refused decision has no policy that would have allowed.
  const asItStands =
    count === 1
      ? []
      : [
          'elseif cost > 0 then',
          '  local _',
          ...policies.map(
            (i) =>
              `  if ok${i} then _, remaining${i}, reset${i} = fast_evaluate(${figuresOf(i)}, 0, now, ${state(i)}); wait${i} = 0 end`,
          ),
        ];
  return [
    ...policies.map(
      (i) =>
        `local ok${i}, remaining${i}, reset${i}, wait${i}, ${nextNumbers(shape, i).join(', ')} = fast_evaluate(${figuresOf(i)}, cost, now, ${state(i)})`,
    ),
    `if ${all((i) => `ok${i}`, ' and ')} then`,
    '  if cost > 0 then',
    `    local ${all((i) => `used${i}`, ', ')}, ttl = ${all((i) => `capacity${i} - remaining${i}`, ', ')}, min_ttl`,
    ...policies.map(
      (i) => `    if used${i} < 1 then used${i} = 1 end\n    if reset${i} > ttl then ttl = reset${i} end`,
    ),
    ...keepsTtl,
    // Each state with its units spent and when it fully resets (what another version reads),
    // after the directory, by one pack.
    `    local next = directory .. struct.pack('${statesFormat(count)}', ${all((i) => packed(shape, `used${i}`, `now + reset${i}`, i).join(', '), ',\n      ')})`,
    `    ${chargeWrite(shape, 'key', 'next', '    ')}`,
    '  end',
    ...asItStands,
    'end',
  ].join('\n');
};

/** Each policy's outcome as the reply carries it. */
const outcomes = (count: number): string =>
  numbered(count)
    .map((i) => `ok${i} and 1 or 0, remaining${i}, reset${i}, wait${i}`)
    .join(',\n  ');

/** One decision: the client's string read, decided, written, and the reply packed. */
const oneDecision = (shape: FastShape, count: number): string => `
local key = KEYS[1]
local text, ${readOf(shape, count).join(', ')} = redis.call('GET', key)
if text then
  ${indented(readStates(shape, count), '  ')}
end
${decide(shape, count)}
return struct.pack('<d${'dddd'.repeat(count)}', redis_now,
  ${outcomes(count)})`;

/**
 * A batch: every client's states read and checked before the first decision writes, each
 * client at most once, then kept in one table until its decision.
 */
const batch = (shape: FastShape, count: number): string => {
  const read = readOf(shape, count).join(', ');
  const width = readOf(shape, count).length;
  const slots = numbered(width)
    .map((k) => `states[base + ${k}]`)
    .join(', ');
  const replySlots = numbered(4 * count)
    .map((k) => `reply[n + ${k}]`)
    .join(', ');
  // An algorithm that reads the limit and delay converts them once for the whole batch.
  const conversions = shape.readsLimit
    ? numbered(count).map((i) => `limit${i}, max_delay${i} = limit${i} + 0, max_delay${i} + 0`)
    : [];
  return `
${conversions.join('\n')}
local texts, seen, states = redis.call('MGET', unpack(KEYS, 1, decisions)), {}, {}
for d = 1, decisions do
  local key, text = KEYS[d], texts[d]
  if seen[key] then return general() end
  seen[key] = true
  if text then
    local base, ${read} = (d - 1) * ${width}
    ${indented(readStates(shape, count), '    ')}
    ${slots} = ${read}
  end
end
local reply, n = { redis_now }, 1
for d = 1, decisions do
  local key, base = KEYS[d], (d - 1) * ${width}
  local ${read} = ${slots}
  ${indented(decide(shape, count), '  ')}
  ${replySlots} =
    ${indented(outcomes(count), '  ')}
  n = n + ${4 * count}
end
return struct.pack('<' .. string.rep('d', n), unpack(reply))`;
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
export const unrolledLua = (shape: FastShape, count: number): string => `
${figures(count).join('\n')}
if decisions == 1 then${indented(oneDecision(shape, count), '  ')}
end
${batch(shape, count)}
`;
