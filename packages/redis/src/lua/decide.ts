/**
 * The body of every script: read each policy's state, evaluate them all, and write only when
 * the whole decision charges. It runs after the algorithm sources have filled `ALGORITHMS`.
 */
export const decideLua = `
local now = tonumber(ARGV[2])
local min_ttl = 60000
if now == nil then
  local time = redis.call('TIME')
  now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
  min_ttl = 0
end
local refunding = ARGV[1] == 'refund'
local cost = tonumber(ARGV[3])
local count = (#ARGV - 3) / 7
local policies, algorithms, states = {}, {}, {}
for i = 1, count do
  local at = 3 + (i - 1) * 7
  local algorithm = ALGORITHMS[ARGV[at + 1]]
  if algorithm == nil then return redis.error_reply('ERR sluice: no algorithm ' .. ARGV[at + 1] .. ' in this script') end
  policies[i] = {
    capacity = tonumber(ARGV[at + 2]), limit = tonumber(ARGV[at + 3]), window = tonumber(ARGV[at + 4]),
    max_delay = tonumber(ARGV[at + 5]), refill_amount = tonumber(ARGV[at + 6]),
    refill_interval = tonumber(ARGV[at + 7]),
  }
  algorithms[i] = algorithm
  states[i] = algorithm.load(KEYS[i])
end

local function store(i, next, reset_ms)
  if reset_ms <= 0 then
    redis.call('DEL', KEYS[i])
    return
  end
  algorithms[i].save(KEYS[i], states[i], next)
  redis.call('PEXPIRE', KEYS[i], math.max(reset_ms, min_ttl))
end

local outcomes, allowed = {}, true
for i = 1, count do
  local p = policies[i]
  if refunding then
    local state = states[i]
    if state ~= nil then
      state = algorithms[i].refund(state, p, p.capacity, cost, now)
      outcomes[i] = algorithms[i].evaluate(state, p, p.capacity, 0, now)
      store(i, state, outcomes[i].reset)
    else
      outcomes[i] = algorithms[i].evaluate(nil, p, p.capacity, 0, now)
    end
  else
    outcomes[i] = algorithms[i].evaluate(states[i], p, p.capacity, cost, now)
  end
  allowed = allowed and outcomes[i].allowed
end
if allowed and cost > 0 and not refunding then
  for i = 1, count do store(i, outcomes[i].next, outcomes[i].reset) end
elseif cost > 0 and not refunding then
  -- Nothing was charged, so a policy that would have allowed reports its quota as it stands.
  for i = 1, count do
    local o = outcomes[i]
    if o.allowed then
      local p = policies[i]
      local current = algorithms[i].evaluate(states[i], p, p.capacity, 0, now)
      o.remaining, o.reset, o.delay = current.remaining, current.reset, 0
    end
  end
end

local reply = { allowed and 1 or 0, now }
for i = 1, count do
  local o = outcomes[i]
  reply[#reply + 1] = o.allowed and 1 or 0
  reply[#reply + 1] = o.remaining
  reply[#reply + 1] = o.reset
  reply[#reply + 1] = o.retry
  reply[#reply + 1] = o.delay
end
return reply
`;
