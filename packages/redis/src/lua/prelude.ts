/**
 * The contract every sluice script shares, and the helpers the algorithm sources use. Each
 * script is this prelude, one or more algorithm sources, then the decision body.
 */
export const preludeLua = `
-- sluice: one rate-limit decision for one client over every policy of a limiter, all or nothing.
-- KEYS[i]  state of policy i for the client, i = 1..n where n = (#ARGV - 3) / 7; every key of
--          one call shares one {hash tag}; keys after the n-th repeat the n-th (padding)
-- ARGV[1]  'consume': decide, and charge every policy only if all allow and cost > 0
--          'refund': give cost back to every policy that has state (never beyond a fresh state)
-- ARGV[2]  now in epoch ms, or '' to read the Redis clock (TIME) once
-- ARGV[3]  cost in units, an integer >= 0 (0 decides without charging)
-- ARGV[3 + 7(i-1) + 1 .. 7]  policy i: algorithm name, capacity (effective, units),
--          limit (units per window), windowMs, maxDelayMs, refillAmount (units),
--          refillIntervalMs (0 = continuous refill)
-- reply    { allowed 1|0, now (epoch ms), then per policy:
--            allowed 1|0, remaining (units), resetAfterMs, retryAfterMs, delayMs }; integers only
-- Every key written gets a PEXPIRE of its own resetAfterMs, after which its state reads as fresh.
-- With an injected now the TTL is at least 60 s: Redis cannot relate that clock to its own, and
-- keeping a state longer never changes a decision.
local ALGORITHMS = {}
local function ceil_div(a, b) return math.ceil(a / b) end
local function floor_div(a, b) return math.floor(a / b) end

-- Fixed-size states live in a hash, one named field per entry of the reference state.
local function hash_state(fields)
  return {
    load = function(key)
      local values = redis.call('HMGET', key, unpack(fields))
      if not values[1] then return nil end
      local state = {}
      for i = 1, #fields do state[i] = tonumber(values[i]) end
      return state
    end,
    save = function(key, _, next)
      local args = {}
      for i = 1, #fields do
        args[#args + 1] = fields[i]
        args[#args + 1] = next[i]
      end
      redis.call('HSET', key, unpack(args))
    end,
  }
end
`;
