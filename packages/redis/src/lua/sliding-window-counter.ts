/** Mirrors core's `slidingWindowCounter` line for line. */
export const slidingWindowCounterLua = `
-- sliding-window-counter: state { window = index floor(now / windowMs), current = units in it, previous = units in the one before }.
-- estimate = previous * (windowMs - elapsed) / windowMs + current, compared multiplied through by windowMs.
local sliding_counter = {}
local function counter_counts(state, index)
  if state == nil then return 0, 0 end
  if state[1] == index then return state[2], state[3] end
  if state[1] == index - 1 then return 0, state[2] end
  return 0, 0
end
local function counter_reset(current, previous, window, elapsed)
  if current > 0 then return 2 * window - elapsed end
  if previous > 0 then return window - elapsed end
  return 0
end
-- The estimate only falls as time goes on: look for the first passing instant in this window, then the next.
local function counter_retry(current, previous, capacity, cost, window, elapsed)
  local spare_now = (capacity - current - cost) * window
  if spare_now >= 0 and previous > 0 then
    local at = window - floor_div(spare_now, previous)
    if at < window then return at - elapsed end
  end
  local spare_next = (capacity - cost) * window
  local at_next = 0
  if current > 0 then at_next = max(0, window - floor_div(spare_next, current)) end
  return window - elapsed + at_next
end
sliding_counter.evaluate = function(state, p, capacity, cost, at)
  local window = p.window
  local lag = clock_lag(state, window, at)
  local now = at + lag
  local index = floor(now / window)
  local elapsed = now - index * window
  local current, previous = counter_counts(state, index)
  local used = previous * (window - elapsed) + current * window
  local budget = capacity * window
  if used + cost * window <= budget then
    local after = current + cost
    return {
      allowed = true, remaining = floor_div(budget - used - cost * window, window),
      reset = lagged(counter_reset(after, previous, window, elapsed), lag), retry = 0, delay = 0,
      next = { index, after, previous },
    }
  end
  return {
    allowed = false, remaining = max(0, floor_div(budget - used, window)),
    reset = lagged(counter_reset(current, previous, window, elapsed), lag),
    retry = counter_retry(current, previous, capacity, cost, window, elapsed) + lag, delay = 0,
  }
end
sliding_counter.seed = function(used, p, now) return { floor(now / p.window), used, 0 } end
sliding_counter.refund = function(state, p, _, cost, now)
  local index = floor(now / p.window)
  if state[1] ~= index then return state end
  return { index, max(0, state[2] - cost), state[3] }
end
ALGORITHMS['sliding-window-counter'] = sliding_counter
`;

/** The same decision for the straight-line path (`fast.ts`): numbers in, numbers out, no tables. */
export const slidingWindowCounterFastLua = `
local FAST_NAME = 'sliding-window-counter'
local function fast_evaluate(limit, window, max_delay, capacity, cost, at, state_index, state_current, state_previous)
  -- Whole numbers by % (Lua's x % y is x - floor(x / y) * y, inline) where the hot path
  -- would call math's C functions.
  local lag = 0
  if state_index ~= nil then
    lag = state_index * window - at
    if lag < 0 then lag = 0 end
  end
  local now = at + lag
  local elapsed = now % window
  local index = (now - elapsed) / window
  local current, previous = 0, 0
  if state_index == index then
    current, previous = state_current, state_previous
  elseif state_index == index - 1 then
    previous = state_current
  end
  local used = previous * (window - elapsed) + current * window
  local budget = capacity * window
  if used + cost * window <= budget then
    -- The reset written out (a local function would be a closure built on every call).
    local after, spare, reset = current + cost, budget - used - cost * window, 0
    if after > 0 then reset = 2 * window - elapsed + lag elseif previous > 0 then reset = window - elapsed + lag end
    return true, (spare - spare % window) / window, reset, 0, index, after, previous
  end
  -- The estimate only falls as time goes on: the first passing instant in this window, else in the next.
  local retry
  local spare_now = (capacity - current - cost) * window
  if spare_now >= 0 and previous > 0 and window - math.floor(spare_now / previous) < window then
    retry = window - math.floor(spare_now / previous) - elapsed
  else
    local at_next = 0
    if current > 0 then at_next = math.max(0, window - math.floor((capacity - cost) * window / current)) end
    retry = window - elapsed + at_next
  end
  local reset = 0
  if current > 0 then reset = 2 * window - elapsed + lag elseif previous > 0 then reset = window - elapsed + lag end
  return false, math.max(0, math.floor((budget - used) / window)), reset, retry + lag
end
`;
