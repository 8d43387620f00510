/** Mirrors core's `slidingWindowLog` line for line. */
export const slidingWindowLogLua = `
-- sliding-window-log: list { t1, c1, t2, c2, ... } oldest first: the time (epoch ms) and cost (units) of
-- every allowed request in (now - windowMs, now]; requests allowed in the same ms share one entry.
-- The log grows with the limit, so it lives in a key of its own rather than in the client's state string.
local sliding_log = { own_key = true }
sliding_log.load = function(key)
  local values = redis.call('LRANGE', key, 0, -1)
  if #values == 0 then return nil end
  for i = 1, #values do values[i] = tonumber(values[i]) end
  return values
end
-- next is the stored list without its first next.drop values, then changed at the tail only, so
-- it is written by trimming and appending rather than rewriting the whole list. Without a
-- stored list to build on (another version's state taken over), the list is written anew.
sliding_log.save = function(key, stored, next)
  if stored == nil then
    redis.call('DEL', key)
    for i = 1, #next, 512 do redis.call('RPUSH', key, unpack(next, i, math.min(i + 511, #next))) end
    return
  end
  if next.drop > 0 then redis.call('LTRIM', key, next.drop, -1) end
  local kept = (stored and #stored or 0) - next.drop
  local same = 0
  while same < kept and same < #next and stored[next.drop + same + 1] == next[same + 1] do same = same + 1 end
  if same < kept then
    if same == 0 then redis.call('DEL', key) else redis.call('LTRIM', key, 0, same - 1) end
  end
  for i = same + 1, #next, 512 do redis.call('RPUSH', key, unpack(next, i, math.min(i + 511, #next))) end
end
-- Drops entries at or before boundary: they are outside (now - windowMs, now].
local function log_prune(state, boundary)
  local live = { drop = 0 }
  if state == nil then return live end
  local start = 1
  while start <= #state and state[start] <= boundary do start = start + 2 end
  live.drop = start - 1
  for i = start, #state do live[#live + 1] = state[i] end
  return live
end
-- Entry i leaves the window at t_i + windowMs: wait until enough of the oldest have left.
local function log_retry(live, used, capacity, cost, window, now)
  local left = used
  for i = 1, #live, 2 do
    left = left - live[i + 1]
    if left + cost <= capacity then return live[i] + window - now end
  end
  return window
end
sliding_log.evaluate = function(state, p, capacity, cost, now)
  local window = p.window
  local live = log_prune(state, now - window)
  local used = 0
  for i = 2, #live, 2 do used = used + live[i] end
  if used + cost <= capacity then
    -- A peek (cost 0) logs nothing, so its reset time is that of the entries already there.
    local n = #live
    if cost > 0 and n > 0 and live[n - 1] == now then
      live[n] = live[n] + cost
    elseif cost > 0 then
      live[n + 1] = now
      live[n + 2] = cost
    end
    local reset = 0
    if #live > 0 then reset = live[#live - 1] + window - now end
    return { allowed = true, remaining = capacity - used - cost, reset = reset, retry = 0, delay = 0, next = live }
  end
  local reset = 0
  if #live > 0 then reset = live[#live - 1] + window - now end
  return {
    allowed = false, remaining = max(0, capacity - used), reset = reset,
    retry = log_retry(live, used, capacity, cost, window, now), delay = 0,
  }
end
sliding_log.seed = function(used, _, now)
  if used > 0 then return { now, used } end
  return {}
end
sliding_log.refund = function(state, p, _, cost, now)
  local next = log_prune(state, now - p.window)
  local left = cost
  while left > 0 and #next > 0 do
    local newest = next[#next]
    if newest > left then
      next[#next] = newest - left
      left = 0
    else
      left = left - newest
      next[#next] = nil
      next[#next] = nil
    end
  end
  return next
end
ALGORITHMS['sliding-window-log'] = sliding_log
`;
