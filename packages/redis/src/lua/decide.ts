import {
  FIGURE_BYTES,
  FULL_FIGURES,
  figureLua,
  figuresFormatLua,
  SHORT_FIGURES,
  sendsAllFiguresLua,
} from '../figures.js';
import {
  DIRECTORY_END,
  DIRECTORY_START,
  directoryOf,
  REPLY_NUMBERS,
  refusedWaitLua,
  STATE_BYTES,
  soundNumbersLua,
  statesFormat,
} from './prelude.js';

/**
 * The body of every script: decide each request of the batch in order. Every client's state
 * string is read by one MGET for the whole batch and written once at the end; a log policy's
 * list is read and written as it changes. It runs after the algorithm sources have filled
 * `ALGORITHMS`.
 */
export const decideLua = `
-- Globals are table lookups on every use; this loop reads them thousands of times per call.
-- TTLs go to Redis through format('%d'): a Lua number would be printed through the slower
-- floating-point path.
local KEYS, ARGV, find, format, tonumber = KEYS, ARGV, string.find, string.format, tonumber
local redis_now = nil
local function read_redis_now()
  local time = redis.call('TIME')
  redis_now = tonumber(time[1]) * 1000 + floor(tonumber(time[2]) / 1000)
  return redis_now
end

-- A run's policies, from its kinds (in the header), heads and figures entries.
local function policies_of(kinds, heads, figures)
  local set, capacities, n = { logs = 0 }, {}, 0
  for kind in string.gmatch(kinds, '[^,]+') do
    n = n + 1
    local name, amount, interval = string.match(kind, '^([%a-]+):?(%d*):?(%d*)$')
    local algorithm = ALGORITHMS[name]
    if algorithm == nil then error('sluice: no algorithm ' .. kind .. ' in this script') end
    if algorithm.own_key then set.logs = set.logs + 1 end
    set[n] = { algorithm = algorithm, refill_amount = tonumber(amount) or 0, refill_interval = tonumber(interval) or 0 }
  end
  -- Every figure, or the short entry's (every limit its capacity, every maxDelayMs 0); then
  -- where the states' numbers start, which this body works out for itself.
  local sent = ${SHORT_FIGURES} * n
  if ${sendsAllFiguresLua('figures', 'n')} then sent = ${FULL_FIGURES} * n end
  local offset_at = ${FIGURE_BYTES} * sent + 1
  if #figures <= offset_at or #figures ~= offset_at + string.byte(figures, offset_at) then
    error('sluice: bad figures for ' .. kinds)
  end
  local v = { struct.unpack(${figuresFormatLua('sent')}, figures) }
  local function figure(pair) return ${figureLua('v[2 * pair + 1]', 'v[2 * pair + 2]')} end
  local i = 0
  for slot, version in string.gmatch(heads, ' ([^@ ]+)@([^= ]+)=') do
    i = i + 1
    local p = set[i]
    if p == nil then break end
    p.slot, p.version = slot, version
    p.window, capacities[i] = figure(2 * i - 2), figure(2 * i - 1)
    if sent == ${FULL_FIGURES} * n then
      p.limit, p.max_delay = figure(2 * n + 2 * i - 2), figure(2 * n + 2 * i - 1)
    else
      p.limit, p.max_delay = capacities[i], 0
    end
  end
  if i ~= n then error('sluice: bad policy heads ' .. heads) end
  return set, capacities
end

-- Each decision's run (ARGV holds runs of three entries: a header with their count, heads and
-- figures that many decisions in a row share, each parsed here once per run) and where its
-- client key is; then every client's state string in one read.
local decision_runs, client_key_at, key_at, decisions, op = {}, {}, 1, 0, nil
local at = 1
while at <= #ARGV do
  local _, _, count, run_op, cost, kinds, now, charge_age, charge_span =
    find(ARGV[at], '^(%d+) (%a+) (%d+) ([^ ]+) ?(%d*) ?(%d*) ?(%d*)$')
  if count == nil or ARGV[at + 2] == nil then error('sluice: bad run header at ARGV[' .. at .. ']: ' .. ARGV[at]) end
  -- The call's operation is its first run's: a call of 'all' holds nothing else.
  op = op or run_op
  local min_ttl = 60000
  now = tonumber(now)
  if now == nil then now, min_ttl = redis_now or read_redis_now(), 0 end
  local set, capacities = policies_of(kinds, ARGV[at + 1], ARGV[at + 2])
  local run = {
    now = now, min_ttl = min_ttl, refunding = run_op == 'refund', cost = tonumber(cost),
    set = set, capacities = capacities, charged_at = now - (tonumber(charge_age) or 0),
  }
  run.charged_by = run.charged_at + (tonumber(charge_span) or 0)
  for _ = 1, tonumber(count) do
    decisions = decisions + 1
    decision_runs[decisions] = run
    client_key_at[decisions] = key_at
    key_at = key_at + 1 + run.set.logs
  end
  at = at + 3
end
local client_keys = {}
for i = 1, #client_key_at do client_keys[i] = KEYS[client_key_at[i]] end
local texts = redis.call('MGET', unpack(client_keys))

-- Decoded on first use: states[key][slot] = { version, state = { n, n, n }, used, reset_at }.
local states, write_sets, write_ttls, write_nows, write_floors = {}, {}, {}, {}, {}
-- Decodes a client's string, on a miss in states: this layout (see the header), or the text
-- layout earlier versions wrote, which the next write replaces. A string holding a number
-- sluice never writes is damaged: none of its states is read.
local function decode_states(key, text)
  local by_slot = {}
  if text and string.byte(text, 1) == ${DIRECTORY_START} then
    local stop = find(text, '\\${DIRECTORY_END}', 2, true)
    if stop then
      local at = stop + 1
      for slot, version in string.gmatch(string.sub(text, 2, stop - 1), ' ([^@ ]+)@([^= ]+)=') do
        if #text < at + ${STATE_BYTES - 1} then break end
        local a, b, c, used, reset_at = struct.unpack('${statesFormat(1)}', text, at)
        local sum = a + b + c + used + reset_at
        if not (${soundNumbersLua(['a', 'b', 'c', 'used', 'reset_at'])}) then
          by_slot = {}
          break
        end
        by_slot[slot] = { version = version, used = used, reset_at = reset_at, state = { a, b, c } }
        at = at + ${STATE_BYTES}
      end
    end
  elseif text then
    -- One match per state, read where the last one ended. A state this script cannot read
    -- is skipped, so the ones after it still count.
    local at = 1
    while true do
      local _, stop, slot, version, a, b, c, used, reset_at =
        find(text, '^ ([^@ ]+)@([^= ]+)=(%d+),(%d+),?(%d*);(%d+),(%d+)', at)
      if stop ~= nil then
        by_slot[slot] = {
          version = version, used = tonumber(used), reset_at = tonumber(reset_at),
          state = { tonumber(a), tonumber(b), tonumber(c) },
        }
      else
        stop = find(text, ' ', at + 1, true)
        if stop == nil then break end
        stop = stop - 1
      end
      at = stop + 1
    end
  end
  states[key] = by_slot
  return by_slot
end

-- The policy's state as this version reads it (SPEC 4: state is kept per policy name). Its
-- own version's state as it is; another version's (another limit, window or algorithm) as
-- the units it had spent when written, until it would have fully reset. A log's list is kept
-- only by its own version.
local function current_state(p, record, log_key, now, min_ttl)
  local own = record ~= nil and record.version == p.version
  local used = 0
  if not own and record ~= nil and now < record.reset_at then used = record.used end
  if log_key ~= nil then
    if own then return p.algorithm.load(log_key, record.state[1]) end
    local ttl = 0
    if used > 0 then ttl = max(record.reset_at - now, min_ttl) end
    return p.algorithm.take_over(log_key, used, now, ttl)
  end
  if own then return record.state end
  if used > 0 then return p.algorithm.seed(used, p, now) end
  return nil
end

local function ttl_of(reset, min_ttl)
  if reset <= 0 then return 0 end
  return max(reset, min_ttl)
end

-- Puts a policy's next state in place, with the units it has spent and when it fully
-- resets, which another version of it reads; returns the TTL its reset asks for. A state
-- fully reset as of now (a refund in a window that has ended, beside a policy that still
-- counts) is kept while the client's string is, as the memory store keeps it: a clock that
-- steps back still counts it. A refund that brings every policy back to fresh drops them all
-- (\`drop_fresh\`).
local function store(p, by_slot, log_key, next, outcome, capacity, now, min_ttl)
  local reset = outcome.reset
  local ttl = ttl_of(reset, min_ttl)
  local record = { version = p.version, used = max(1, capacity - outcome.remaining), reset_at = now + reset }
  if log_key ~= nil then
    if ttl > 0 then
      p.algorithm.save(log_key, next)
      redis.call('PEXPIRE', log_key, format('%d', ttl))
    else
      -- Trimmed by the refund, a log with nothing in its window is empty.
      redis.call('DEL', log_key)
    end
    record.state = { next.total, 0 }
  else
    record.state = next
  end
  by_slot[p.slot] = record
  return ttl
end

-- After a refund: when every policy of the set is back to fresh, their states go, as the
-- memory store drops them; kept as of now, a clock that then stepped back would read them as spent.
local function drop_fresh(set, by_slot, log_keys, outcomes)
  for i = 1, #set do
    if outcomes[i].reset > 0 then return end
  end
  for i = 1, #set do
    by_slot[set[i].slot] = nil
    if log_keys[i] ~= nil then redis.call('DEL', log_keys[i]) end
  end
end

local reply, n = { 0 }, 1
-- One decision's states and outcomes: a decision on its own reuses one table per policy set
-- (decided at once, so free again for the next), a decision of a group gets its own.
local function evaluate_decision(d, own_tables)
  local run = decision_runs[d]
  local now, refunding, cost, set, capacities = run.now, run.refunding, run.cost, run.set, run.capacities
  local client_key = client_keys[d]
  -- Cache lookups inline and calls only on a miss: this loop is most of the script's time.
  local by_slot = states[client_key] or decode_states(client_key, texts[d])
  local count = #set
  local decided = set.decided
  if own_tables or decided == nil then
    decided = { current = {}, log_keys = {}, outcomes = {}, fresh_at = {} }
    if not own_tables then set.decided = decided end
  end
  local current, log_keys, outcomes, fresh_at = decided.current, decided.log_keys, decided.outcomes, decided.fresh_at
  local log_at = client_key_at[d]
  for i = 1, count do
    local p = set[i]
    local log_key = nil
    if p.algorithm.own_key then
      log_at = log_at + 1
      log_key = KEYS[log_at]
    end
    log_keys[i] = log_key
    local record = by_slot[p.slot]
    current[i] = current_state(p, record, log_key, now, run.min_ttl)
    -- A state read from another version's reads as fresh once that one has fully reset.
    fresh_at[i] = record ~= nil and record.version ~= p.version and now < record.reset_at and record.reset_at
  end

  local allowed, ttl, changed = true, 0, false
  for i = 1, count do
    local p = set[i]
    local algorithm = p.algorithm
    if refunding then
      if current[i] ~= nil then
        local next = algorithm.refund(current[i], p, capacities[i], cost, now, run.charged_at, run.charged_by)
        outcomes[i] = algorithm.evaluate(next, p, capacities[i], 0, now)
        ttl = max(ttl, store(p, by_slot, log_keys[i], next, outcomes[i], capacities[i], now, run.min_ttl))
        changed = true
      else
        outcomes[i] = algorithm.evaluate(nil, p, capacities[i], 0, now)
      end
    else
      outcomes[i] = algorithm.evaluate(current[i], p, capacities[i], cost, now)
    end
    allowed = allowed and outcomes[i].allowed
  end
  if refunding and changed then drop_fresh(set, by_slot, log_keys, outcomes) end
  decided.by_slot, decided.allowed, decided.ttl, decided.changed = by_slot, allowed, ttl, changed
  return decided
end

-- Charges a decision if it passes (on its own, or with every decision of its group), records
-- what to write, and appends its outcomes to the reply.
local function finish_decision(d, decided, allowed)
  local run = decision_runs[d]
  local now, min_ttl, refunding, cost, set, capacities =
    run.now, run.min_ttl, run.refunding, run.cost, run.set, run.capacities
  local client_key = client_keys[d]
  local count = #set
  local by_slot, current, log_keys, outcomes = decided.by_slot, decided.current, decided.log_keys, decided.outcomes
  local ttl, changed = decided.ttl, decided.changed
  local charged = allowed and cost > 0 and not refunding
  if charged then
    for i = 1, count do
      ttl = max(ttl, store(set[i], by_slot, log_keys[i], outcomes[i].next, outcomes[i], capacities[i], now, min_ttl))
    end
    changed = true
  elseif cost > 0 and not refunding then
    -- Nothing was charged, so a policy that would have allowed reports its quota as it stands.
    for i = 1, count do
      local o = outcomes[i]
      if o.allowed then
        local p = set[i]
        local as_is = p.algorithm.evaluate(current[i], p, capacities[i], 0, now)
        o.remaining, o.reset, o.delay = as_is.remaining, as_is.reset, 0
      end
    end
  end
  -- A log trimmed of expired entries keeps its total in step, charged or not.
  if not changed then
    for i = 1, count do
      local p, state = set[i], current[i]
      local record = by_slot[p.slot]
      if log_keys[i] ~= nil and state.trimmed and record ~= nil and record.version == p.version then
        record.state = { state.total, 0 }
        changed = true
      end
    end
  end
  -- The string is written once per client, at the end, with what the last change left, this
  -- decision's policies first.
  if changed then
    write_sets[client_key] = set
    write_ttls[client_key] = ttl
    write_nows[client_key] = now
    write_floors[client_key] = min_ttl
  end

  for i = 1, count do
    local o = outcomes[i]
    local reset, retry = o.reset, o.retry
    -- Another version's state left as it was: until it resets, every read converts the same
    -- units as if spent just then and decides as this one did; then the slot is fresh. So
    -- its waits end exactly then, whatever this version's shape would have released first.
    local fresh = not charged and not refunding and decided.fresh_at[i]
    if fresh then
      reset = fresh - now
      if not o.allowed then retry = reset end
    end
    -- An allowed policy has no retry and a refused one no delay: one signed number says which
    -- wait, and with it the outcome.
    local wait = o.delay
    if not o.allowed then wait = ${refusedWaitLua('retry')} end
    reply[n + 1], reply[n + 2], reply[n + 3] = o.remaining, reset, wait
    n = n + ${REPLY_NUMBERS}
  end
end

if op == 'all' then
  -- One group: every decision is decided first, then all are charged or none is. The caller
  -- gives each decision a client key of its own, so no decision changes what another reads.
  local decided, every = {}, true
  for d = 1, decisions do
    decided[d] = evaluate_decision(d, true)
    every = every and decided[d].allowed
  end
  for d = 1, decisions do finish_decision(d, decided[d], every) end
else
  for d = 1, decisions do
    local decided = evaluate_decision(d, false)
    finish_decision(d, decided, decided.allowed)
  end
end
reply[1] = redis_now or 0

for key, set in pairs(write_sets) do
  -- Every version's states go back, each kept as long as it has not fully reset: the writing
  -- decision's policies first and in order, so that its next call finds its directory, then
  -- the others'.
  local ttl, now, floor_ttl, by_slot = write_ttls[key], write_nows[key], write_floors[key], states[key]
  local heads, numbers, placed = {}, {}, {}
  -- A state fully reset as of now is kept for the writing decision's own policies (see
  -- \`store\`); another version's is dropped: its reader takes nothing from it any more.
  local function place(slot, record, own)
    if placed[slot] or (record.reset_at <= now and not own) then return end
    placed[slot] = true
    local state, n = record.state, #numbers
    heads[#heads + 1] = ' ' .. slot .. '@' .. record.version .. '='
    numbers[n + 1], numbers[n + 2], numbers[n + 3], numbers[n + 4], numbers[n + 5] =
      state[1], state[2], state[3] or 0, record.used, record.reset_at
    -- On an injected clock, at least min_ttl: Redis cannot relate that clock to its own.
    ttl = max(ttl, record.reset_at - now, floor_ttl)
  end
  for i = 1, #set do
    local record = by_slot[set[i].slot]
    if record then place(set[i].slot, record, record.version == set[i].version) end
  end
  for slot, record in pairs(by_slot) do place(slot, record, false) end
  if #heads == 0 or ttl <= 0 then
    redis.call('DEL', key)
  else
    local text = ${directoryOf(['table.concat(heads)'])} .. struct.pack('<' .. string.rep('d', #numbers), unpack(numbers))
    redis.call('SET', key, text, 'PX', format('%d', ttl))
  end
end
-- One string of little-endian doubles (exact for these integers): a client reads it at once,
-- where an array costs it a parse per number.
return struct.pack('<' .. string.rep('d', #reply), unpack(reply))
`;
