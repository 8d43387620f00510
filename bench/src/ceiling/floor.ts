import { createHash } from 'node:crypto';
import { limitFor, windowFor } from '../inproc/contender.js';
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
 * by one `struct.unpack` when the string holds this policy's state (its directory compared
 * whole), the next state written as the string other limiter versions read (the directory,
 * then five numbers by one `struct.pack`) by PSETEX with a formatted TTL, and the packed reply
 * of four numbers (Redis's now, one policy's outcome). The TTL is 1 ms, as in the replayed
 * gcra call (a limit of 10^9 a minute resets 1 ms after a charge), so the GET finds a state as
 * rarely as there. A decision costs at least this plus reading its figures and deciding.
 */
const layoutLua = `local time = redis.call('TIME')
local now = time[1] * 1000 + math.floor(time[2] / 1000)
local directory = '\\1' .. ARGV[2] .. '\\0'
local text, a, b = redis.call('GET', KEYS[1]), 0, 0
if text and string.find(text, directory, 1, true) == 1 and #text == #directory + 40 then
  a, b = struct.unpack('<dd', text, #directory + 1)
end
redis.call('PSETEX', KEYS[1], string.format('%d', 1), directory .. struct.pack('<ddddd', now + a % 2, b, 0, 1, now + 1))
return struct.pack('<dddd', now, 1, 1, 0)`;

/**
 * The layout floor in the sliding window counter's case, where the replayed state outlives
 * the calls (a counter's charge resets a window or two later): TIME, GET, the state's three
 * numbers and reset time read by one `struct.unpack`, the state written back in sluice's
 * layout keeping the key's TTL when there was one and by PSETEX for a window when there was
 * none, and the packed reply of four numbers. No policy figures are read and nothing is
 * decided; the numbers are carried over as read.
 */
const layoutKeptLua = `local time = redis.call('TIME')
local now = time[1] * 1000 + math.floor(time[2] / 1000)
local directory = '\\1' .. ARGV[2] .. '\\0'
local text, a, b, c, reset_at = redis.call('GET', KEYS[1]), nil, 1, 0, nil
if text and string.find(text, directory, 1, true) == 1 and #text == #directory + 40 then
  local _
  a, b, c, _, reset_at = struct.unpack('<ddddd', text, #directory + 1)
end
local next = directory .. struct.pack('<ddddd', a or (now - now % 60000) / 60000, b, c, 1, reset_at or now + 60000)
if reset_at then
  redis.call('SET', KEYS[1], next, 'KEEPTTL')
else
  redis.call('PSETEX', KEYS[1], string.format('%d', 60000), next)
end
return struct.pack('<dddd', now, 1, 1, 0)`;

const script = (label: string, lua: string) => ({
  label,
  lua,
  sha: createHash('sha1').update(lua).digest('hex'),
  decisions: 1,
});

/** The `redis-benchmark` rows of the layout floors, which the report sets beside each decision's cost. */
export const LAYOUT_FLOOR = 'floor: TIME, GET, PSETEX of the state in sluice layout, packed reply';
export const LAYOUT_KEPT_FLOOR = 'floor: the same with the state kept and read back, its TTL kept';
export const GET_SET_FLOOR = 'floor: EVALSHA that GETs and SETs one string';
export const CLOCK_FLOOR = 'floor: TIME, then GET and SET of one string with a 1 ms TTL';
export const FLOOR_LABELS = [GET_SET_FLOOR, CLOCK_FLOOR, LAYOUT_FLOOR, LAYOUT_KEPT_FLOOR];

/**
 * The least a whole one-policy gcra decision on Redis's clock costs in any layout: the
 * policy's figures written into the script as constants (a script per limiter), the state one
 * number of 8 bytes, kept for the window (always long enough, and no TTL to format), and the
 * reply one number the client can derive the fields from (µs until the client's allowance is
 * empty; negative, the wait, when refused). Where even this costs more than a target allows,
 * no store deciding by one script on Redis's clock meets it.
 */
const leastGcraLua = (limit: number, windowMs: number): string => {
  const interval = windowMs / limit;
  const tolerance = windowMs - interval;
  return `local time = redis.call('TIME')
local now = time[1] * 1000 + time[2] / 1000
local state = redis.call('GET', KEYS[1])
local tat = state and struct.unpack('<d', state) or now
if tat < now then tat = now end
if tat - now > ${tolerance} then return (now - tat + ${tolerance}) * 1000 end
local next = tat + ${interval}
redis.call('SET', KEYS[1], struct.pack('<d', next), 'PX', '${windowMs}')
return (next - now) * 1000`;
};

/**
 * The same for the sliding window counter: the state the window's number and its two counts
 * in 24 bytes, kept for two windows; the reply the units left, negative when refused.
 */
const leastCounterLua = (limit: number, windowMs: number): string => `local time = redis.call('TIME')
local now = time[1] * 1000 + time[2] / 1000
local elapsed = now % ${windowMs}
local window = (now - elapsed) / ${windowMs}
local state = redis.call('GET', KEYS[1])
local previous, current = 0, 0
if state then
  local at
  at, previous, current = struct.unpack('<ddd', state)
  if at ~= window then
    if at == window - 1 then previous = current else previous = 0 end
    current = 0
  end
end
local used = previous * (${windowMs} - elapsed) / ${windowMs} + current
if used + 1 > ${limit} then return -1 end
redis.call('SET', KEYS[1], struct.pack('<ddd', window, previous, current + 1), 'PX', '${2 * windowMs}')
return ${limit} - used - 1`;

/**
 * The least whole decisions (`leastGcraLua`, `leastCounterLua`) for the replayed one-policy
 * calls' policy, each with its call's client key: counted by `script-instructions.ts` beside
 * sluice's, to tell what sluice's layout and protocol cost over the least any store could do.
 */
export function leastDecisionCases(captured: readonly CapturedScript[]): RedisBenchCase[] {
  const calls = oneDecisionCalls(captured);
  if (calls === undefined) return [];
  const [limit, windowMs] = [limitFor('pass'), windowFor('pass')];
  const leastCase = (label: string, lua: string, call: CapturedScript): RedisBenchCase => {
    const least = script(label, lua);
    // EVALSHA arguments after the SHA: key count, client key, ...
    const [, key] = call.args;
    return { label, command: ['EVALSHA', least.sha, '1', key as string], script: least };
  };
  return [
    leastCase(
      'least decision: gcra, figures in the script, 8-byte state, one-number reply',
      leastGcraLua(limit, windowMs),
      calls.gcra,
    ),
    leastCase(
      'least decision: sliding-window-counter, the same, 24-byte state',
      leastCounterLua(limit, windowMs),
      calls.counter,
    ),
  ];
}

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
  // A string of a state's size in sluice's layout (the directory's two marks and five numbers):
  // a command line cannot carry the zero bytes of the real one.
  const state = `.${gcraHead}.${'n'.repeat(40)}`;
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
export function replayCases(captured: readonly CapturedScript[]): { cases: RedisBenchCase[]; floors: boolean } {
  const calls = oneDecisionCalls(captured);
  const cases: RedisBenchCase[] = [
    { label: 'INCR (reference)', command: ['INCR', `rb:incr:${RANDOM}`] },
    ...(calls === undefined ? [] : floorCases(calls.gcra, calls.counter)),
    ...captured.map((script) => ({ label: script.label, command: ['EVALSHA', script.sha, ...script.args], script })),
  ];
  return { cases, floors: calls !== undefined };
}

/** The captured one-policy gcra and counter calls the floors are built from, when both were captured. */
function oneDecisionCalls(
  captured: readonly CapturedScript[],
): { gcra: CapturedScript; counter: CapturedScript } | undefined {
  const gcra = captured.find((c) => c.label === 'sluice gcra');
  const counter = captured.find((c) => c.label === 'sluice sliding-window-counter');
  return gcra === undefined || counter === undefined ? undefined : { gcra, counter };
}
