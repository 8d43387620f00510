/** What an algorithm's straight-line decision may use; it comes first. */
export const fastPreludeLua = `
local max, floor, ceil, fmod = math.max, math.floor, math.ceil, math.fmod
`;

/**
 * The straight-line path of a script: one decision that consumes, for a limiter of one policy
 * whose algorithm the script names, over a client whose string holds this version's state of
 * that policy or nothing (the usual call), decided in scalars, without the general body's
 * tables and closures. It reads and writes exactly what the general body does, so any other
 * call (a batch, a refund, several policies, another version's state, a slot this limiter no
 * longer has) runs the general body instead, which has by then nothing to undo: this path
 * writes only once it has decided.
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
if #KEYS ~= 1 or #ARGV ~= 6 or ARGV[1] ~= '1' or ARGV[3] ~= 'consume' then return general() end
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
local capacity, cost = tonumber(ARGV[6]), tonumber(ARGV[4])
local now, min_ttl, redis_now = tonumber(ARGV[2]), 60000, 0
if now == nil then
  local time = redis.call('TIME')
  redis_now = tonumber(time[1]) * 1000 + floor(tonumber(time[2]) / 1000)
  now, min_ttl = redis_now, 0
end

local key = KEYS[1]
local text = redis.call('GET', key)
local a, b, c
if text then
  -- Only this version's state of this one policy: ' slot@version=a,b[,c];used,resetAt'.
  if sub(text, 1, #head) ~= head then return general() end
  local semicolon = find(text, ';', #head, true)
  if semicolon == nil or find(text, ' ', semicolon, true) ~= nil then return general() end
  local comma = find(text, ',', #head, true)
  if comma == nil or comma > semicolon then return general() end
  local comma2 = find(text, ',', comma + 1, true)
  if comma2 == nil then return general() end
  if FAST_FORMAT == '%s%d,%d;%d,%d' then
    if comma2 < semicolon then return general() end
    a, b = tonumber(sub(text, #head + 1, comma - 1)), tonumber(sub(text, comma + 1, semicolon - 1))
  else
    if comma2 > semicolon then return general() end
    a, b, c = tonumber(sub(text, #head + 1, comma - 1)), tonumber(sub(text, comma + 1, comma2 - 1)),
      tonumber(sub(text, comma2 + 1, semicolon - 1))
    if c == nil then return general() end
  end
  if a == nil or b == nil then return general() end
end

local allowed, remaining, reset, wait, x, y, z = fast_evaluate(limit, window, max_delay, capacity, cost, now, a, b, c)
if allowed and cost > 0 then
  -- Charged: the next state, with the units spent and when it fully resets (what another version reads).
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
return struct.pack('<ddddd', redis_now, allowed and 1 or 0, remaining, reset, wait)
`;
