/**
 * Mirrors core's `slidingWindowLog` decision for decision, at a cost that does not grow with
 * the log: the client's string keeps the log's running total, expired entries are trimmed
 * from the head as time passes (each read once, then gone), a charge appends at the tail, and
 * only a refused request reads further, as far as the entries that must leave before it fits.
 */
export const slidingWindowLogLua = `
-- sliding-window-log: list { t1, c1, t2, c2, ... } oldest first: the time (epoch ms) and cost (units) of
-- every allowed request in (now - windowMs, now]; requests allowed in the same ms share one entry.
-- The list lives in a key of its own; the client's string keeps its running total. A state is
-- { key, total } read lazily: a decision reads the list's head only to trim what has expired,
-- and its tail to append or to tell when it resets.
local sliding_log = { own_key = true }
local LOG_CHUNK = 128
local min = math.min
local MAX_WHOLE = 2 ^ 53
-- A list sluice never wrote (a value of another type at the key, an entry that is no whole
-- number below 2^53, a cost below 1, an entry without its pair) is deleted, and the state
-- reading it, when given, becomes fresh: the client decides as fresh, as it does for a damaged
-- string, where an error would end the script after earlier decisions of its batch had
-- written. Entries are checked as they are read, not a chunk at a time: a trim reads one
-- chunk for the few entries at its head.
local function log_damaged(key, state)
  redis.call('DEL', key)
  if state ~= nil then state.total, state.trimmed, state.damaged = 0, true, true end
end
-- An entry as a number: a time (least 0) or a cost (least 1); nil when it is damaged.
local function log_number(entry, least)
  local v = tonumber(entry)
  if v == nil or v % 1 ~= 0 or v < least or v >= MAX_WHOLE then return nil end
  return v
end
-- Entries from..to of the list, from an even index or the tail pair: times at odd positions,
-- costs at even ones; none when the list is no list or has an entry without its pair.
local function log_range(key, from, to, state)
  local entries = redis.pcall('LRANGE', key, from, to)
  if entries.err == nil and #entries % 2 == 0 then return entries end
  log_damaged(key, state)
  return {}
end
-- The units of every entry after the expired ones, which are dropped: the list counted anew
-- when it holds more entries than the string's total has units (edited by hand, or written by
-- a call that failed before writing the string), which would otherwise admit more.
local function log_recount(state, boundary)
  local entries, drop, total = log_range(state.key, 0, -1, state), 0, 0
  for i = 1, #entries - 1, 2 do
    local at, units = log_number(entries[i], 0), log_number(entries[i + 1], 1)
    if at == nil or units == nil then return log_damaged(state.key, state) end
    if at <= boundary then drop = i + 1 else total = total + units end
  end
  if drop > 0 then redis.call('LTRIM', state.key, drop, -1) end
  state.total, state.trimmed = total, true
end
-- Whether key holds anything: a list with an entry, or a value of another type.
local function log_left(key)
  local head = redis.pcall('LRANGE', key, 0, 0)
  return head.err ~= nil or #head > 0
end
-- A version's own state: the list as it is, with the total the string kept.
sliding_log.load = function(key, total) return { key = key, total = total } end
-- Another version's state taken over: a list of one entry, used units spent now. The old
-- list (the same key for the same slot) is rewritten at once: it is a summary that counts
-- no less, so the other version, still reading it, never admits more. It expires with the
-- state it summarises (ttl), whether or not this decision goes on to charge. A client with
-- nothing spent writes only where a list is left to clear: Redis checks a script's memory
-- limit at its first write alone, so a DEL of nothing let a full Redis's new clients be
-- charged past it, and made a peek write.
sliding_log.take_over = function(key, used, now, ttl)
  if used > 0 or log_left(key) then redis.call('DEL', key) end
  if used > 0 then
    redis.call('RPUSH', key, now, used)
    redis.call('PEXPIRE', key, string.format('%d', ttl))
  end
  return { key = key, total = used }
end
-- The units of the entries after boundary: the entries at or before it, outside
-- (now - windowMs, now], are dropped from the head, or with \`dry\` only stepped over. Only a
-- charge and a refund drop them, as core's reference and the memory store do: a peek or a
-- refusal writes nothing, so a clock that steps back finds every entry still counting. Each
-- entry is read once on its way out; the reads grow while whole chunks expire, so a mass
-- expiry (a client back after a quiet window) takes few calls.
local function log_trim(state, boundary, dry)
  local size, from, left = LOG_CHUNK, 0, state.total
  while left > 0 do
    local head = log_range(state.key, from, from + size * 2 - 1, state)
    if #head == 0 then
      state.total, state.trimmed = 0, true
      return 0
    end
    local drop, gone = 0, 0
    for i = 1, #head - 1, 2 do
      local at = log_number(head[i], 0)
      if at == nil then
        log_damaged(state.key, state)
        return 0
      end
      if at > boundary then break end
      local units = log_number(head[i + 1], 1)
      if units == nil then
        log_damaged(state.key, state)
        return 0
      end
      drop, gone = drop + 2, gone + units
    end
    if drop > 0 then
      left = left - gone
      if dry then
        from = from + drop
      else
        redis.call('LTRIM', state.key, drop, -1)
        state.total, state.trimmed = left, true
      end
    end
    -- Every entry holds a unit at least: more entries left in this chunk than the total has
    -- units, or maybe some past a full one with the total spent, and the total is short of
    -- the list. None left: the log is empty, whatever the total said. Counted anew, and
    -- trimmed: a list out of step with its total is repaired, whoever reads it.
    if left < (#head - drop) / 2 or (left <= 0 and #head == size * 2) then
      log_recount(state, boundary)
      return state.total
    end
    if left <= 0 then
      if not dry then state.total = 0 end
      return 0
    end
    if drop < #head then return left end
    size = min(size * 2, LOG_CHUNK * 512)
  end
  return max(left, 0)
end
-- Entry i leaves the window at t_i + windowMs: wait until enough of the oldest have left,
-- reading from the head only as far as that.
-- \`used\` is the units of the entries still in the window: those before it are stepped over.
local function log_retry(state, used, capacity, cost, window, now)
  if cost > capacity then return window end
  local left, from, boundary = used, 0, now - window
  while true do
    local chunk = log_range(state.key, from, from + LOG_CHUNK * 2 - 1, state)
    if #chunk == 0 then return window end
    for i = 1, #chunk - 1, 2 do
      local at, units = log_number(chunk[i], 0), log_number(chunk[i + 1], 1)
      if at == nil or units == nil then
        log_damaged(state.key, state)
        return window
      end
      if at > boundary then
        left = left - units
        if left + cost <= capacity then return at + window - now end
      end
    end
    from = from + LOG_CHUNK * 2
  end
end
-- The newest entry's time and cost; none when the list is empty or damaged.
local function log_tail(key, state)
  local tail = log_range(key, -2, -1, state)
  if #tail == 0 then return nil end
  local at, units = log_number(tail[1], 0), log_number(tail[2], 1)
  if at == nil or units == nil then return log_damaged(key, state) end
  return at, units
end
local function log_reset(state, used, window, now)
  if used <= 0 then return 0 end
  local at = log_tail(state.key, state)
  if at == nil then return 0 end
  return at + window - now
end
sliding_log.evaluate = function(state, p, capacity, cost, now)
  local window = p.window
  local used = 0
  if state == nil then state = { total = 0 } else used = log_trim(state, now - window, true) end
  local outcome
  if used + cost <= capacity then
    -- Logged at the newest entry's time when the clock stands behind it, so the list stays in
    -- order. A peek (cost 0) logs nothing, so its reset time is that of the entries already there.
    local at = now
    if used > 0 then at = max(now, log_tail(state.key, state) or now) end
    local reset = at + window - now
    if cost == 0 then reset = log_reset(state, used, window, now) end
    outcome = {
      allowed = true, remaining = capacity - used - cost, reset = reset, retry = 0, delay = 0,
      -- The charge, if the decision makes it, first drops what has expired (see log_trim):
      -- \`listed\` is the list's total with those entries, \`boundary\` where they end.
      next = { key = state.key, total = used + cost, append = cost, at = at, listed = state.total, boundary = now - window },
    }
  else
    outcome = {
      allowed = false, remaining = max(0, capacity - used), reset = log_reset(state, used, window, now),
      retry = log_retry(state, used, capacity, cost, window, now), delay = 0,
    }
  end
  -- A damaged list met past the trim is gone: decided again, the client decides as fresh.
  if state.damaged then
    state.damaged = nil
    return sliding_log.evaluate(state, p, capacity, cost, now)
  end
  return outcome
end
-- Writes what a charge appended, once the entries that expired are dropped: onto the newest
-- entry when it is from the same ms.
sliding_log.save = function(key, next)
  if next.append == nil or next.append <= 0 then return end
  if next.listed ~= nil and next.listed > next.total - next.append then
    log_trim({ key = key, total = next.listed }, next.boundary, false)
  end
  local at, units = log_tail(key)
  if at == next.at then
    redis.call('LSET', key, -1, units + next.append)
  else
    redis.call('RPUSH', key, next.at, next.append)
  end
end
-- Gives cost back from the newest entries logged by charged_by, never beyond an empty log: a
-- later entry is a later request's, lifted off the tail meanwhile and put back after.
sliding_log.refund = function(state, p, _, cost, now, _, charged_by)
  log_trim(state, now - p.window, false)
  local later, left = {}, cost
  while left > 0 do
    local at, units = log_tail(state.key, state)
    if at == nil then break end
    if at > charged_by then
      redis.call('RPOP', state.key)
      redis.call('RPOP', state.key)
      table.insert(later, 1, units)
      table.insert(later, 1, at)
    elseif units > left then
      redis.call('LSET', state.key, -1, units - left)
      state.total, left = state.total - left, 0
    else
      redis.call('RPOP', state.key)
      redis.call('RPOP', state.key)
      state.total, left = state.total - units, left - units
    end
  end
  -- A list found damaged meanwhile is gone, and the client fresh: nothing is put back.
  if #later > 0 and not state.damaged then redis.call('RPUSH', state.key, unpack(later)) end
  return { key = state.key, total = state.total }
end
ALGORITHMS['sliding-window-log'] = sliding_log
`;
