/**
 * The straight-line path for a limiter of several policies, all of the algorithm the script
 * names: decisions that consume, all with the same arguments, over distinct clients whose
 * strings hold, in any order, this version's state of some of these policies and nothing else.
 * One read and one write per client for the whole set, as the general body does, with the same
 * rules: every policy is charged only if all allow, a refused decision reports each policy that
 * would have allowed as it stands, and the string keeps each state with its units spent and
 * when it fully resets. Anything else (another version's state, a dropped policy's, a client
 * twice) runs the general body, before this path has written anything.
 *
 * It is a block of the straight-line entry (`fast.ts`), which has read the call's cost, clock,
 * decision count and policy count: a function here would be built on every call, one policy or
 * several.
 */
/**
 * A table constructor with room for `size` entries, the first given: Lua sizes a table by its
 * constructor, and each doubling after that reallocates it. Sized for one decision of three
 * policies; more grow as usual.
 */
const room = (size: number, first = 'nil') => `{ ${[first, ...Array<string>(size - 1).fill('nil')].join(', ')} }`;
const POLICIES = 3;

export const fastManyLua = `
do
  -- Every growing table reallocates as it doubles, so the figures share one: per policy its
  -- head, limit, windowMs, maxDelayMs and capacity.
  local policy, capacities_at = ${room(5 * POLICIES)}, 5 + 5 * count
  for i = 1, count do
    local at, p = 5 * i + 1, 5 * i
    if ARGV[at + 1] ~= FAST_NAME then return general() end
    policy[p - 4], policy[p - 3], policy[p - 2], policy[p - 1], policy[p] =
      ARGV[at], ARGV[at + 2] + 0, ARGV[at + 3] + 0, ARGV[at + 4] + 0, ARGV[capacities_at + i] + 0
  end

  -- Every client's states, read and checked before the first decision writes: each head at
  -- most once, its numbers in this version's shape, and together they fill the string.
  local texts
  if decisions == 1 then texts = { redis.call('GET', KEYS[1]) } else texts = redis.call('MGET', unpack(KEYS, 1, decisions)) end
  local states, seen, width = ${room(3 * POLICIES)}, nil, 3 * count
  if decisions > 1 then seen = {} end
  for d = 1, decisions do
    local key, text = KEYS[d], texts[d]
    if seen then
      if seen[key] then return general() end
      seen[key] = true
    end
    if text then
      local base, length = (d - 1) * width, 0
      for i = 1, count do
        local head = policy[5 * i - 4]
        local start = find(text, head, 1, true)
        if start ~= nil then
          local _, stop, a, b, c = find(text, FAST_STATE, start + #head)
          if stop == nil then return general() end
          states[base + 3 * i - 2], states[base + 3 * i - 1] = a + 0, b + 0
          if c then states[base + 3 * i] = c + 0 end
          length = length + stop - start + 1
        end
      end
      if length ~= #text then return general() end
    end
  end

  -- The reply holds each policy's outcome as it is decided; the next states wait beside it.
  local reply, nexts, n = ${room(1 + 4 * POLICIES, 'redis_now')}, ${room(3 * POLICIES)}, 1
  for d = 1, decisions do
    local base, allowed = (d - 1) * width, true
    for i = 1, count do
      local p, at_state = 5 * i, base + 3 * i
      local ok, remaining, reset, wait, x, y, z = fast_evaluate(policy[p - 3], policy[p - 2], policy[p - 1], policy[p], cost, now,
        states[at_state - 2], states[at_state - 1], states[at_state])
      local r = n + 4 * i - 4
      reply[r + 1], reply[r + 2], reply[r + 3], reply[r + 4] = ok and 1 or 0, remaining, reset, wait
      nexts[3 * i - 2], nexts[3 * i - 1], nexts[3 * i] = x, y, z
      allowed = allowed and ok
    end
    if allowed and cost > 0 then
      local text, ttl = '', 0
      for i = 1, count do
        local r, p = n + 4 * i - 4, 5 * i
        local reset = reply[r + 3]
        if reset > 0 then
          local used = max(1, policy[p] - reply[r + 2])
          if nexts[3 * i] == nil then
            text = text .. policy[p - 4] .. format('%d,%d;%d,%d', nexts[3 * i - 2], nexts[3 * i - 1], used, now + reset)
          else
            text = text .. policy[p - 4] .. format('%d,%d,%d;%d,%d', nexts[3 * i - 2], nexts[3 * i - 1], nexts[3 * i], used, now + reset)
          end
          ttl = max(ttl, reset, min_ttl)
        end
      end
      if text == '' then
        redis.call('DEL', KEYS[d])
      else
        redis.call('PSETEX', KEYS[d], format('%d', ttl), text)
      end
    elseif cost > 0 then
      -- Nothing was charged, so a policy that would have allowed reports its quota as it stands.
      for i = 1, count do
        local r, p, at_state = n + 4 * i - 4, 5 * i, base + 3 * i
        if reply[r + 1] == 1 then
          local _, remaining, reset = fast_evaluate(policy[p - 3], policy[p - 2], policy[p - 1], policy[p], 0, now,
            states[at_state - 2], states[at_state - 1], states[at_state])
          reply[r + 2], reply[r + 3], reply[r + 4] = remaining, reset, 0
        end
      end
    end
    n = n + 4 * count
  end
  return struct.pack('<' .. string.rep('d', n), unpack(reply))
end
`;
