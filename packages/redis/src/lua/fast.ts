import { fastManyLua } from './fast-many.js';

/** What an algorithm's straight-line decision may use; it comes first. */
export const fastPreludeLua = `
local max, floor, ceil, fmod = math.max, math.floor, math.ceil, math.fmod
local KEYS, ARGV, find, sub, match, format = KEYS, ARGV, string.find, string.sub, string.match, string.format
-- A policy's limit, windowMs and maxDelayMs, after its algorithm's name in the set.
local FIGURES = '^(%d+) (%d+) (%d+)'
`;

/**
 * The straight-line path of a script: decisions that consume, all with the same arguments (one
 * run: the usual call, one decision or a batch of one limiter's), for a limiter whose policies
 * are all of the algorithm the script names, over distinct clients whose strings hold only
 * this version's states of those policies, or nothing. The usual call, one decision of one
 * policy, is decided here in scalars; a batch or several policies take the block of
 * `fast-many.ts`. Neither builds the general body's tables and closures. They read and write
 * exactly what the general body does, so any other call (several runs, a refund, a client
 * twice in one batch, another version's state, a slot this limiter no longer has) runs the
 * general body instead, which has by then nothing to undo: this path writes only once it
 * knows it decides the whole call.
 *
 * Inside Redis a script pays for every C function it calls and every object it allocates
 * (a `tonumber` parses its text twice, arithmetic on a numeric string once; `format` copies a
 * `%s` through sprintf, where `..` joins it; `PSETEX` is `SET ... PX` with one argument
 * fewer; a local function is a closure built on every call, with an object for each local it
 * captures), so text is cut with plain `find`, one pattern and `sub`, each number converted
 * once, the one-decision path is written out rather than called, and nothing is built that a
 * decision does not need.
 *
 * It runs after the algorithm's `fast_evaluate(limit, window, max_delay, capacity, cost, now,
 * a, b, c)`, which returns allowed, remaining, reset, wait (delay if allowed, retry if not)
 * and, when allowed, the next state's numbers; `FAST_MARK`, '=<algorithm> ' as the set names
 * it; and `FAST_STATE`, the pattern of a state's numbers after its ' slot@version=' head.
 */
export const fastLua = `
if #ARGV ~= 6 or ARGV[3] ~= 'consume' then return general() end
local cost, now, min_ttl, redis_now = ARGV[4] + 0, ARGV[2], 60000, 0
if now == '' then
  local time = redis.call('TIME')
  redis_now = time[1] * 1000 + floor(time[2] / 1000)
  now, min_ttl = redis_now, 0
else
  now = now + 0
end
-- The set: ' slot@version=algorithm limit windowMs maxDelayMs refillAmount refillIntervalMs;'
-- per policy; a single policy has the only ';', last.
local set = ARGV[5]
if ARGV[1] ~= '1' or find(set, ';', 1, true) ~= #set then
  local decisions = ARGV[1] + 0
  ${fastManyLua}
end

-- One decision of one policy. '=' ends the head (slot and version never hold one).
local equals = find(set, FAST_MARK, 1, true)
if equals == nil then return general() end
local head, limit, window, max_delay = sub(set, 1, equals), match(set, FIGURES, equals + #FAST_MARK)
if max_delay == nil then return general() end
limit, window, max_delay = limit + 0, window + 0, max_delay + 0
local capacity, key = ARGV[6] + 0, KEYS[1]

-- The client's string holds this policy's state in this version (' slot@version=a,b[,c];used,resetAt')
-- or nothing: one pattern checks the shape and cuts the numbers.
local text, a, b, c = redis.call('GET', key), nil, nil, nil
if text then
  if find(text, head, 1, true) ~= 1 then return general() end
  local _, stop
  _, stop, a, b, c = find(text, FAST_STATE, #head + 1)
  if stop ~= #text then return general() end
  a, b = a + 0, b + 0
  if c then c = c + 0 end
end

-- On a charge, the next state with the units spent and when it fully resets (what another
-- version reads), the head joined rather than formatted: format copies a %s through sprintf.
local allowed, remaining, reset, wait, x, y, z = fast_evaluate(limit, window, max_delay, capacity, cost, now, a, b, c)
if allowed and cost > 0 then
  if reset > 0 then
    local next
    if z == nil then
      next = head .. format('%d,%d;%d,%d', x, y, max(1, capacity - remaining), now + reset)
    else
      next = head .. format('%d,%d,%d;%d,%d', x, y, z, max(1, capacity - remaining), now + reset)
    end
    redis.call('PSETEX', key, format('%d', max(reset, min_ttl)), next)
  else
    redis.call('DEL', key)
  end
end
return struct.pack('<ddddd', redis_now, allowed and 1 or 0, remaining, reset, wait)
`;
