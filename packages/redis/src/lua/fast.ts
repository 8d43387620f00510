import { fastManyLua } from './fast-many.js';

/** What an algorithm's straight-line decision may use; it comes first. */
export const fastPreludeLua = `
local max, floor, ceil, fmod = math.max, math.floor, math.ceil, math.fmod
local KEYS, ARGV, find, sub, format = KEYS, ARGV, string.find, string.sub, string.format
`;

/**
 * The straight-line path of a script: decisions that consume, all with the same arguments (one
 * run: the usual call, one decision or a batch of one limiter's), for a limiter of one policy
 * whose algorithm the script names, over distinct clients whose strings hold this version's
 * state of that policy or nothing. They are decided in scalars, without the general body's
 * tables and closures; a limiter of several policies of that algorithm takes the block of
 * `fast-many.ts` instead. It reads and writes exactly what the general body does, so any other
 * call (several runs, a refund, a client twice in one batch, another
 * version's state, a slot this limiter no longer has) runs the general body instead, which has
 * by then nothing to undo: this path writes only once it knows it decides the whole call.
 *
 * Inside Redis a script pays for every C function it calls and every object it allocates
 * (a `tonumber` parses its text twice, arithmetic on a numeric string once; `format` copies a
 * `%s` through sprintf, where `..` joins it; `PSETEX` is `SET ... PX` with one argument
 * fewer), so text is cut with plain `find`, one `match` and `sub`, each number converted once,
 * and nothing is built that a decision does not need.
 *
 * It runs after the algorithm's `fast_evaluate(limit, window, max_delay, capacity, cost, now,
 * a, b, c)`, which returns allowed, remaining, reset, wait (delay if allowed, retry if not)
 * and, when allowed, the next state's numbers; `FAST_MARK`, '=<algorithm> ' as the set names
 * it; and `FAST_STATE`, the pattern of a state's numbers after its ' slot@version=' head.
 */
export const fastLua = `
-- A client's string as this policy's state numbers: nothing for no string, false if it holds
-- anything but this version's state of this one policy (' slot@version=a,b[,c];used,resetAt').
-- One pattern checks the shape and cuts the numbers; arithmetic converts them, which costs
-- half a tonumber call.
local function fast_read(text, head)
  if not text then return nil end
  if find(text, head, 1, true) ~= 1 then return false end
  local _, stop, a, b, c = find(text, FAST_STATE, #head + 1)
  if stop ~= #text then return false end
  if c then return a + 0, b + 0, c + 0 end
  return a + 0, b + 0
end

-- Decides for one client (the policy's figures passed in: a closure's upvalues would each cost
-- an allocation per call) and, on a charge, writes its next state with the units spent and when
-- it fully resets (what another version reads); returns the reply's four numbers.
local function fast_decide(key, a, b, c, head, limit, window, max_delay, capacity, cost, now, min_ttl)
  local allowed, remaining, reset, wait, x, y, z = fast_evaluate(limit, window, max_delay, capacity, cost, now, a, b, c)
  if allowed and cost > 0 then
    if reset > 0 then
      -- The head joined, not formatted: format copies a %s through sprintf.
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
  return allowed and 1 or 0, remaining, reset, wait
end

if #ARGV ~= 6 or ARGV[3] ~= 'consume' then return general() end
local cost, decisions, now, min_ttl, redis_now = ARGV[4] + 0, ARGV[1] + 0, ARGV[2], 60000, 0
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
if find(set, ';', 1, true) ~= #set then ${fastManyLua} end
-- '=' ends the head (slot and version never hold one).
local equals = find(set, FAST_MARK, 1, true)
if equals == nil then return general() end
local s1 = equals + #FAST_MARK - 1
local s2 = find(set, ' ', s1 + 1, true)
local s3 = find(set, ' ', s2 + 1, true)
local s4 = find(set, ' ', s3 + 1, true)
local head = sub(set, 1, equals)
local limit, window, max_delay = sub(set, s1 + 1, s2 - 1) + 0, sub(set, s2 + 1, s3 - 1) + 0, sub(set, s3 + 1, s4 - 1) + 0
local capacity = ARGV[6] + 0

if decisions == 1 then
  local a, b, c = fast_read(redis.call('GET', KEYS[1]), head)
  if a == false then return general() end
  return struct.pack('<ddddd', redis_now, fast_decide(KEYS[1], a, b, c, head, limit, window, max_delay, capacity, cost, now, min_ttl))
end

-- A batch: every client's state is read and checked before the first decision writes.
local texts = redis.call('MGET', unpack(KEYS, 1, decisions))
local seen, states = {}, {}
for d = 1, decisions do
  local key = KEYS[d]
  if seen[key] then return general() end
  seen[key] = true
  local a, b, c = fast_read(texts[d], head)
  if a == false then return general() end
  states[3 * d - 2], states[3 * d - 1], states[3 * d] = a, b, c
end
local reply, n = { redis_now }, 1
for d = 1, decisions do
  reply[n + 1], reply[n + 2], reply[n + 3], reply[n + 4] =
    fast_decide(KEYS[d], states[3 * d - 2], states[3 * d - 1], states[3 * d], head, limit, window, max_delay, capacity, cost, now, min_ttl)
  n = n + 4
end
return struct.pack('<' .. string.rep('d', n), unpack(reply))
`;
