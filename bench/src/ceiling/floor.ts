import { createHash } from 'node:crypto';
import type { RedisBenchCase } from './redis-benchmark.js';
import { type CapturedScript, RANDOM } from './scripts.js';

/**
 * The least any script deciding from one string can cost: it GETs the string and SETs it
 * back with a TTL, and does nothing else. Replayed with the client key of sluice's gcra call,
 * its Redis time per call is what EVALSHA itself costs on this machine, so a script's figure
 * can be read against it.
 */
const getSetLua = `local text = redis.call('GET', KEYS[1])
redis.call('SET', KEYS[1], ARGV[1], 'PX', 60000)
return text`;

/**
 * Redis's clock, and the client's state read and written with a TTL: a decision reads `TIME`
 * so that every app server shares one clock (SPEC §4). What any store that decides by one
 * script on Redis's clock must do, in any layout, at its cheapest: the TTL is 1 ms, as in the
 * replayed gcra call, so the GET finds the state as rarely as there and Redis keeps few keys.
 * Where this alone costs more than a target allows, no such store meets it.
 */
const clockLua = `local time = redis.call('TIME')
local text = redis.call('GET', KEYS[1])
redis.call('SET', KEYS[1], ARGV[1], 'PX', 1)
return text`;

/**
 * What a one-policy decision on Redis's clock must do in sluice's layout, with none of the
 * policy's figures read and no rate-limit arithmetic: TIME, GET, the state's two numbers read
 * by one pattern when there is a state, the next state written as the string other limiter
 * versions read (head, four numbers with `%d`) by PSETEX with a formatted TTL, and the packed
 * reply of five numbers. The TTL is 1 ms, as in the replayed gcra call (a limit of 10^9 a
 * minute resets 1 ms after a charge), so the GET finds a state as rarely as there. A decision
 * costs at least this plus reading its figures and deciding.
 */
const layoutLua = `local time = redis.call('TIME')
local now = time[1] * 1000 + math.floor(time[2] / 1000)
local head = ARGV[2]
local text, a, b = redis.call('GET', KEYS[1]), 0, 0
if text then
  local _, stop, x, y = string.find(text, '^(%d+),(%d+);%d+,%d+', #head + 1)
  if stop then a, b = x + 0, y + 0 end
end
redis.call('PSETEX', KEYS[1], string.format('%d', 1), head .. string.format('%d,%d;%d,%d', now + a % 2, b, 1, now + 1))
return struct.pack('<ddddd', now, 1, 0, 1, 0)`;

/**
 * The layout floor in the sliding window counter's case, where the replayed state outlives
 * the calls (a counter's charge resets a window or two later): TIME, GET, the state's three
 * numbers and reset time read by one pattern, the state written back in sluice's layout (head,
 * five numbers with `%d`) keeping the key's TTL when there was one and by PSETEX for a window
 * when there was none, and the packed reply of five numbers. No policy figures are read and
 * nothing is decided; the numbers are carried over as read, so the ones written on a
 * first call (the counter's window index and reset time) have as many digits as the
 * counter's.
 */
const layoutKeptLua = `local time = redis.call('TIME')
local now = time[1] * 1000 + math.floor(time[2] / 1000)
local head = ARGV[2]
local text, a, b, c, reset_at = redis.call('GET', KEYS[1]), nil, 1, 0, nil
if text then
  local _, stop, x, y, z, r = string.find(text, '^(%d+),(%d+),(%d+);%d+,(%d+)', #head + 1)
  if stop then a, b, c, reset_at = x + 0, y + 0, z + 0, r + 0 end
end
local next = head .. string.format('%d,%d,%d;%d,%d', a or (now - now % 60000) / 60000, b, c, 1, reset_at or now + 60000)
if reset_at then
  redis.call('SET', KEYS[1], next, 'KEEPTTL')
else
  redis.call('PSETEX', KEYS[1], string.format('%d', 60000), next)
end
return struct.pack('<ddddd', now, 1, 0, 1, 0)`;

/**
 * The state floors of a gcra decision over `count` policies, in sluice's text layout or in
 * binary: TIME, GET, each policy's state found and read (in text, its head found and its two
 * numbers read by one pattern; in binary, all of them by one `struct.unpack`), the next states
 * written by PSETEX with a 1 ms TTL (in text, each head and four numbers with `%d`; in
 * binary, one `struct.pack` of two numbers a policy), and the packed reply of one number and
 * four a policy. No policy's figures are read and nothing is decided. Replayed with the
 * arguments of the captured gcra call of as many policies, whose heads come every five
 * arguments from the second and whose state expires 1 ms after its charge, as these do. Set 3
 * against 1, they show what a further policy costs in each layout before any deciding: where
 * the text floor's ratio alone reaches a target's, only another layout could meet it.
 */
function stateFloorLua(count: 1 | 3, encoding: 'text' | 'binary'): string {
  const policies = Array.from({ length: count }, (_, i) => ({ a: `a${i}`, b: `b${i}`, head: `ARGV[${2 + 5 * i}]` }));
  const numbers = policies.flatMap(({ a, b }) => [a, b]);
  const read =
    encoding === 'binary'
      ? `if text and #text == ${16 * count} then ${numbers.join(', ')} = struct.unpack('<${'dd'.repeat(count)}', text) end`
      : `if text then
  local start, stop, x, y, _
${policies
  .map(
    ({ a, b, head }) => `  start = string.find(text, ${head}, 1, true)
  if start then
    _, stop, x, y = string.find(text, '^(%d+),(%d+);%d+,%d+', start + #${head})
    if stop then ${a}, ${b} = x + 0, y + 0 end
  end`,
  )
  .join('\n')}
end`;
  const next =
    encoding === 'binary'
      ? `struct.pack('<${'dd'.repeat(count)}', ${policies.map(({ a, b }) => `now + ${a} % 2, ${b}`).join(', ')})`
      : policies
          .map(({ a, b, head }) => `${head} .. string.format('%d,%d;%d,%d', now + ${a} % 2, ${b}, 1, now + 1)`)
          .join(' .. ');
  return `local time = redis.call('TIME')
local now = time[1] * 1000 + math.floor(time[2] / 1000)
local text = redis.call('GET', KEYS[1])
local ${numbers.join(', ')} = ${numbers.map(() => '0').join(', ')}
${read}
redis.call('PSETEX', KEYS[1], string.format('%d', 1), ${next})
return struct.pack('<d${'dddd'.repeat(count)}', now${', 1, 0, 1, 0'.repeat(count)})`;
}

const script = (label: string, lua: string) => ({
  label,
  lua,
  sha: createHash('sha1').update(lua).digest('hex'),
  args: [],
  decisions: 1,
});

/** The `redis-benchmark` rows of the layout floors, which the report sets beside each decision's cost. */
export const LAYOUT_FLOOR = 'floor: TIME, GET, PSETEX of the state in sluice layout, packed reply';
export const LAYOUT_KEPT_FLOOR = 'floor: the same with the state kept, read by one pattern, its TTL kept';
export const GET_SET_FLOOR = 'floor: EVALSHA that GETs and SETs one string';
export const CLOCK_FLOOR = 'floor: TIME, then GET and SET of one string with a 1 ms TTL';
export const FLOOR_LABELS = [GET_SET_FLOOR, CLOCK_FLOOR, LAYOUT_FLOOR, LAYOUT_KEPT_FLOOR];

/** The `redis-benchmark` row of a state floor (`stateFloorLua`). */
export const stateFloorLabel = (count: 1 | 3, encoding: 'text' | 'binary'): string =>
  `floor: ${count === 1 ? "1 policy's state" : `${count} policies' states`} ${encoding === 'text' ? "in sluice's text" : 'in binary (struct)'}, nothing decided`;
const STATE_FLOORS = (['text', 'binary'] as const).flatMap((encoding) =>
  ([1, 3] as const).map((count) => ({ count, encoding, label: stateFloorLabel(count, encoding) })),
);
export const STATE_FLOOR_LABELS = STATE_FLOORS.map((f) => f.label);

/**
 * The floors, each replayed with the client key and arguments of the sluice call it is read
 * against (`gcra` and `counter`: the captured one-policy calls), so that a floor's strings,
 * and Redis's memory per client, are of the sizes the call's are: with 100k clients kept, a
 * key 26 bytes longer cost the counter's call 0.5 µs.
 */
function floorCases(gcra: CapturedScript, counter: CapturedScript): RedisBenchCase[] {
  const getSet = script(GET_SET_FLOOR, getSetLua);
  const clock = script(CLOCK_FLOOR, clockLua);
  const layout = script(LAYOUT_FLOOR, layoutLua);
  const kept = script(LAYOUT_KEPT_FLOOR, layoutKeptLua);
  // EVALSHA arguments after the SHA: key count, client key, header, head, ...
  const [, gcraKey, , gcraHead] = gcra.args;
  const state = `${gcraHead}1700000000000,0;1,1700000000600`;
  return [
    { label: getSet.label, command: ['EVALSHA', getSet.sha, '1', gcraKey as string, state], script: getSet },
    { label: clock.label, command: ['EVALSHA', clock.sha, '1', gcraKey as string, state], script: clock },
    { label: layout.label, command: ['EVALSHA', layout.sha, ...gcra.args], script: layout },
    { label: kept.label, command: ['EVALSHA', kept.sha, ...counter.args], script: kept },
  ];
}

/**
 * What a Redis ceiling replays, in the order its report lists it: INCR for reference, the
 * floors, then the captured calls. The floors are built from the one-policy gcra and counter
 * calls and left out (`floors: false`) when either was not captured.
 */
export function replayCases(captured: readonly CapturedScript[]): {
  cases: RedisBenchCase[];
  floors: boolean;
  stateFloors: boolean;
} {
  const oneDecision = (label: string) => captured.find((c) => c.label === label);
  const gcra = oneDecision('sluice gcra');
  const counter = oneDecision('sluice sliding-window-counter');
  const gcraThree = oneDecision('sluice gcra, 3 policies');
  const floors = gcra !== undefined && counter !== undefined;
  const stateFloors = gcra === undefined || gcraThree === undefined ? [] : stateFloorCases(gcra, gcraThree);
  const cases: RedisBenchCase[] = [
    { label: 'INCR (reference)', command: ['INCR', `rb:incr:${RANDOM}`] },
    ...(floors ? floorCases(gcra, counter) : []),
    ...stateFloors,
    ...captured.map((script) => ({ label: script.label, command: ['EVALSHA', script.sha, ...script.args], script })),
  ];
  return { cases, floors, stateFloors: stateFloors.length > 0 };
}

/**
 * The state floors, each replayed with the key and arguments of the captured gcra call of its
 * policy count, as sluice's own 3 ÷ 1 compares those two calls: a one-policy floor given the
 * three-policy call's 19 arguments would carry 12 more strings into every call.
 */
const stateFloorCases = (gcra: CapturedScript, gcraThree: CapturedScript): RedisBenchCase[] =>
  STATE_FLOORS.map(({ count, encoding, label }) => {
    const floor = script(label, stateFloorLua(count, encoding));
    const call = count === 1 ? gcra : gcraThree;
    return { label, command: ['EVALSHA', floor.sha, ...call.args], script: floor };
  });
