/** What an algorithm's straight-line decision may use; it comes first. */
export const fastPreludeLua = `
local max, floor, ceil, fmod = math.max, math.floor, math.ceil, math.fmod
`;

/**
 * The straight-line path of a script: decisions that consume, all with the same arguments (one
 * run: the usual call, one decision or a batch of one limiter's), for a limiter of one policy
 * whose algorithm the script names, over distinct clients whose strings hold this version's
 * state of that policy or nothing. They are decided in scalars, without the general body's
 * tables and closures. It reads and writes exactly what the general body does, so any other
 * call (several runs, a refund, several policies, a client twice in one batch, another
 * version's state, a slot this limiter no longer has) runs the general body instead, which has
 * by then nothing to undo: this path writes only once it knows it decides the whole call.
 *
 * Inside Redis a script pays for every C function it calls and every object it allocates
 * (a `tonumber` costs about as much as ten lines of arithmetic, and each string or table
 * brings garbage collection work with it), so text is cut with plain `find` and `sub`, each
 * number converted once, and nothing is built that a decision does not need.
 *
 * It runs after the algorithm's `fast_evaluate(limit, window, max_delay, capacity, cost, now,
 * a, b, c)`, which returns allowed, remaining, reset, wait (delay if allowed, retry if not)
 * and, when allowed, the next state's numbers; `FAST_ALGORITHM`; and `FAST_FORMAT`, a state
 * as the string holds it after its ' slot@version=' head.
 */
export const fastLua = `
local KEYS, ARGV, find, sub, tonumber = KEYS, ARGV, string.find, string.sub, tonumber

-- A client's string as this policy's state numbers: nothing for no string, false if it holds
-- anything but this version's state of this one policy (' slot@version=a,b[,c];used,resetAt').
local function fast_read(text, head)
  if not text then return nil end
  if sub(text, 1, #head) ~= head then return false end
  local semicolon = find(text, ';', #head, true)
  if semicolon == nil or find(text, ' ', semicolon, true) ~= nil then return false end
  local comma = find(text, ',', #head, true)
  if comma == nil or comma > semicolon then return false end
  local comma2 = find(text, ',', comma + 1, true)
  if comma2 == nil then return false end
  local a, b, c
  if FAST_FORMAT == '%s%d,%d;%d,%d' then
    if comma2 < semicolon then return false end
    a, b = tonumber(sub(text, #head + 1, comma - 1)), tonumber(sub(text, comma + 1, semicolon - 1))
  else
    if comma2 > semicolon then return false end
    a, b, c = tonumber(sub(text, #head + 1, comma - 1)), tonumber(sub(text, comma + 1, comma2 - 1)),
      tonumber(sub(text, comma2 + 1, semicolon - 1))
    if c == nil then return false end
  end
  if a == nil or b == nil then return false end
  return a, b, c
end

-- Decides for one client (the policy's figures passed in: a closure's upvalues would each cost
-- an allocation per call) and, on a charge, writes its next state with the units spent and when
-- it fully resets (what another version reads); returns the reply's four numbers.
local function fast_decide(key, a, b, c, head, limit, window, max_delay, capacity, cost, now, min_ttl)
  local allowed, remaining, reset, wait, x, y, z = fast_evaluate(limit, window, max_delay, capacity, cost, now, a, b, c)
  if allowed and cost > 0 then
    if reset > 0 then
      local next
      if FAST_FORMAT == '%s%d,%d;%d,%d' then
        next = string.format(FAST_FORMAT, head, x, y, max(1, capacity - remaining), now + reset)
      else
        next = string.format(FAST_FORMAT, head, x, y, z, max(1, capacity - remaining), now + reset)
      end
      redis.call('SET', key, next, 'PX', string.format('%d', max(reset, min_ttl)))
    else
      redis.call('DEL', key)
    end
  end
  return allowed and 1 or 0, remaining, reset, wait
end

if #ARGV ~= 6 or ARGV[3] ~= 'consume' then return general() end
-- The set: ' slot@version=algorithm limit windowMs maxDelayMs refillAmount refillIntervalMs;', once.
local set = ARGV[5]
local equals = find(set, '=', 1, true)
local s1 = find(set, ' ', equals, true)
if sub(set, equals + 1, s1 - 1) ~= FAST_ALGORITHM then return general() end
local s2 = find(set, ' ', s1 + 1, true)
local s3 = find(set, ' ', s2 + 1, true)
local s4 = find(set, ' ', s3 + 1, true)
if find(set, ';', s4, true) ~= #set then return general() end
local head = sub(set, 1, equals)
local limit, window, max_delay = tonumber(sub(set, s1 + 1, s2 - 1)), tonumber(sub(set, s2 + 1, s3 - 1)),
  tonumber(sub(set, s3 + 1, s4 - 1))
local capacity, cost, decisions = tonumber(ARGV[6]), tonumber(ARGV[4]), tonumber(ARGV[1])
local now, min_ttl, redis_now = tonumber(ARGV[2]), 60000, 0
if now == nil then
  local time = redis.call('TIME')
  redis_now = tonumber(time[1]) * 1000 + floor(tonumber(time[2]) / 1000)
  now, min_ttl = redis_now, 0
end

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
