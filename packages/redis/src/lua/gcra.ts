/** Mirrors core's `gcra` line for line. */
export const gcraLua = `
-- gcra: state { tat = theoretical arrival time (epoch ms), fraction = its part below 1 ms in units of 1/limit ms }.
-- In units of 1/limit ms a cost c moves the TAT by c * windowMs; the tolerance is capacity * windowMs.
local gcra = {}
local function gcra_ahead(state, limit, now)
  if state == nil or state[1] < now then return 0 end
  return (state[1] - now) * limit + state[2]
end
gcra.evaluate = function(state, p, capacity, cost, now)
  local window, limit = p.window, p.limit
  local ahead = gcra_ahead(state, limit, now)
  local next_ahead = ahead + cost * window
  local late = next_ahead - capacity * window
  if late <= p.max_delay * limit then
    return {
      allowed = true, remaining = max(0, floor_div(-late, window)), reset = ceil_div(next_ahead, limit),
      retry = 0, delay = late > 0 and ceil_div(late, limit) or 0,
      next = { now + floor_div(next_ahead, limit), fmod(next_ahead, limit) },
    }
  end
  return {
    allowed = false, remaining = max(0, floor_div(capacity * window - ahead, window)),
    reset = ceil_div(ahead, limit), retry = ceil_div(late - p.max_delay * limit, limit), delay = 0,
  }
end
gcra.seed = function(used, p, now)
  local ahead = used * p.window
  return { now + floor_div(ahead, p.limit), fmod(ahead, p.limit) }
end
gcra.refund = function(state, p, _, cost, now)
  local ahead = max(0, gcra_ahead(state, p.limit, now) - cost * p.window)
  return { now + floor_div(ahead, p.limit), fmod(ahead, p.limit) }
end
ALGORITHMS['gcra'] = gcra
`;

/** The same decision for the straight-line path (`fast.ts`): numbers in, numbers out, no tables. */
export const gcraFastLua = `
local FAST_NAME = 'gcra'
local function fast_evaluate(limit, window, max_delay, capacity, cost, now, tat, fraction)
  limit, max_delay = limit + 0, max_delay + 0
  local ahead = 0
  if tat ~= nil and tat >= now then ahead = (tat - now) * limit + fraction end
  local next_ahead = ahead + cost * window
  local late = next_ahead - capacity * window
  if late <= max_delay * limit then
    -- The same whole numbers by % (Lua's x % y is x - floor(x / y) * y, inline), without a
    -- call of math's C functions each.
    local delay, remaining, below = 0, 0, next_ahead % limit
    if late > 0 then delay = math.ceil(late / limit) end
    if late < 0 then remaining = (-late - -late % window) / window end
    local whole = (next_ahead - below) / limit
    if below > 0 then return true, remaining, whole + 1, delay, now + whole, below end
    return true, remaining, whole, delay, now + whole, below
  end
  return false, math.max(0, math.floor((capacity * window - ahead) / window)), math.ceil(ahead / limit),
    math.ceil((late - max_delay * limit) / limit)
end
`;
