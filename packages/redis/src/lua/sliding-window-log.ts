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
local function log_number(key, index) return tonumber(redis.call('LINDEX', key, index)) end
-- Entries from..to of the list. A value of another type at the key (an error reply) is no
-- log: it is deleted, as a client's string of another type is overwritten, where the error
-- would end the script after earlier decisions of its batch had written their lists.
local function log_range(key, from, to)
  local entries = redis.pcall('LRANGE', key, from, to)
  if entries.err then
    redis.call('DEL', key)
    return {}
  end
  return entries
end
-- The units of every entry after the expired ones, which are dropped: the list counted anew
-- when it holds more entries than the string's total has units (edited by hand, or written by
-- a call that failed before writing the string), which would otherwise admit more.
local function log_recount(state, boundary)
  local entries, drop, total = redis.call('LRANGE', state.key, 0, -1), 0, 0
  for i = 1, #entries - 1, 2 do
    if tonumber(entries[i]) <= boundary then drop = i + 1 else total = total + tonumber(entries[i + 1]) end
  end
  if drop > 0 then redis.call('LTRIM', state.key, drop, -1) end
  state.total, state.trimmed = total, true
end
-- A version's own state: the list as it is, with the total the string kept.
sliding_log.load = function(key, total) return { key = key, total = total } end
-- Another version's state taken over: a list of one entry, used units spent now. The old
-- list (the same key for the same slot) is rewritten at once: it is a summary that counts
-- no less, so the other version, still reading it, never admits more. It expires with the
-- state it summarises (ttl), whether or not this decision goes on to charge.
sliding_log.take_over = function(key, used, now, ttl)
  redis.call('DEL', key)
  if used > 0 then
    redis.call('RPUSH', key, now, used)
    redis.call('PEXPIRE', key, string.format('%d', ttl))
  end
  return { key = key, total = used }
end
-- Drops entries at or before boundary from the head: they are outside (now - windowMs, now].
-- Each entry is read once on its way out; the reads grow while whole chunks expire, so a
-- mass expiry (a client back after a quiet window) takes few calls.
local function log_trim(state, boundary)
  local size = LOG_CHUNK
  while state.total > 0 do
    local head = log_range(state.key, 0, size * 2 - 1)
    if #head == 0 then
      state.total, state.trimmed = 0, true
      return
    end
    local drop, gone = 0, 0
    for i = 1, #head - 1, 2 do
      if tonumber(head[i]) > boundary then break end
      drop, gone = drop + 2, gone + tonumber(head[i + 1])
    end
    if drop > 0 then
      redis.call('LTRIM', state.key, drop, -1)
      state.total, state.trimmed = state.total - gone, true
    end
    -- Every entry holds a unit at least: more entries left in this chunk than the total has
    -- units, or maybe some past a full one with the total spent, and the total is short of
    -- the list. None left: the log is empty, whatever the total said.
    if state.total < (#head - drop) / 2 or (state.total <= 0 and #head == size * 2) then
      return log_recount(state, boundary)
    end
    if state.total <= 0 then
      state.total = 0
      return
    end
    if drop < #head then return end
    size = min(size * 2, LOG_CHUNK * 512)
  end
end
-- Entry i leaves the window at t_i + windowMs: wait until enough of the oldest have left,
-- reading from the head only as far as that.
local function log_retry(state, capacity, cost, window, now)
  if cost > capacity then return window end
  local left, from = state.total, 0
  while true do
    local chunk = redis.call('LRANGE', state.key, from, from + LOG_CHUNK * 2 - 1)
    if #chunk == 0 then return window end
    for i = 1, #chunk - 1, 2 do
      left = left - tonumber(chunk[i + 1])
      if left + cost <= capacity then return tonumber(chunk[i]) + window - now end
    end
    from = from + LOG_CHUNK * 2
  end
end
local function log_reset(state, window, now)
  if state.total <= 0 then return 0 end
  return log_number(state.key, -2) + window - now
end
sliding_log.evaluate = function(state, p, capacity, cost, now)
  local window = p.window
  if state == nil then state = { total = 0 } else log_trim(state, now - window) end
  local used = state.total
  if used + cost <= capacity then
    -- Logged at the newest entry's time when the clock stands behind it, so the list stays in
    -- order. A peek (cost 0) logs nothing, so its reset time is that of the entries already there.
    local at = now
    if used > 0 then at = max(now, log_number(state.key, -2)) end
    local reset = at + window - now
    if cost == 0 then reset = log_reset(state, window, now) end
    return {
      allowed = true, remaining = capacity - used - cost, reset = reset, retry = 0, delay = 0,
      next = { key = state.key, total = used + cost, append = cost, at = at },
    }
  end
  return {
    allowed = false, remaining = max(0, capacity - used), reset = log_reset(state, window, now),
    retry = log_retry(state, capacity, cost, window, now), delay = 0,
  }
end
-- Writes what a charge appended: onto the newest entry when it is from the same ms.
sliding_log.save = function(key, next)
  if next.append == nil or next.append <= 0 then return end
  local tail = log_range(key, -2, -1)
  if #tail == 2 and tonumber(tail[1]) == next.at then
    redis.call('LSET', key, -1, tonumber(tail[2]) + next.append)
  else
    redis.call('RPUSH', key, next.at, next.append)
  end
end
-- Gives cost back from the newest entries, never beyond an empty log.
sliding_log.refund = function(state, p, _, cost, now)
  log_trim(state, now - p.window)
  local left = cost
  while left > 0 and state.total > 0 do
    local newest = log_number(state.key, -1)
    if newest == nil then break end
    if newest > left then
      redis.call('LSET', state.key, -1, newest - left)
      state.total, left = state.total - left, 0
    else
      redis.call('RPOP', state.key)
      redis.call('RPOP', state.key)
      state.total, left = state.total - newest, left - newest
    end
  end
  return { key = state.key, total = state.total }
end
ALGORITHMS['sliding-window-log'] = sliding_log
`;
