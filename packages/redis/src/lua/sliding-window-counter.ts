import { MAX_EPOCH_MS } from '@sluice/core';
import type { FastAlgorithm } from './fast-shape.js';

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
  state = window_state(state, window, at)
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
-- Newest units first: the written window's count, then the one before it while the estimate still weighs that.
-- Given back to the count of the charge's window: the current one, or the previous once the
-- state has moved on (core's comment).
sliding_counter.refund = function(state, p, _, cost, _, charged_at)
  local charged = floor(charged_at / p.window)
  if state[1] == charged then return { state[1], max(0, state[2] - cost), state[3] } end
  if state[1] == charged + 1 then return { state[1], state[2], max(0, state[3] - cost) } end
  return state
end
ALGORITHMS['sliding-window-counter'] = sliding_counter
`;

/** The same decision for the straight-line path (`fast.ts`), inline: numbers in, numbers out, no tables. */
export const slidingWindowCounterFast: FastAlgorithm = {
  name: 'sliding-window-counter',
  shape: { size: 3, keepsTtl: true, readsLimit: false },
  decide: ({ window, capacity, cost, now, state: [stateIndex, stateCurrent, statePrevious] }, out) => {
    const [x, y, z] = out.next;
    return `do
  -- Whole numbers by % (Lua's x % y is x - floor(x / y) * y, inline) where the hot path
  -- would call math's C functions.
  local lag = 0
  if ${stateIndex} ~= nil then
    lag = ${stateIndex} * ${window} - ${now}
    if lag < 0 then lag = 0 end
    -- No sound write leaves it (see window_state): it reads as fresh.
    if lag > ${MAX_EPOCH_MS} or ${stateCurrent} < 0 or ${statePrevious} < 0 then
      ${stateIndex}, ${stateCurrent}, ${statePrevious}, lag = nil, nil, nil, 0
    end
  end
  local at = ${now} + lag
  local elapsed = at % ${window}
  local index = (at - elapsed) / ${window}
  local current, previous = 0, 0
  if ${stateIndex} == index then
    current, previous = ${stateCurrent}, ${statePrevious}
  elseif ${stateIndex} == index - 1 then
    previous = ${stateCurrent}
  end
  local used = previous * (${window} - elapsed) + current * ${window}
  local budget = ${capacity} * ${window}
  if used + ${cost} * ${window} <= budget then
    local after, spare = current + ${cost}, budget - used - ${cost} * ${window}
    ${out.ok}, ${out.remaining}, ${out.reset}, ${out.wait} = true, (spare - spare % ${window}) / ${window}, 0, 0
    ${x}, ${y}, ${z} = index, after, previous
    if after > 0 then
      ${out.reset} = 2 * ${window} - elapsed + lag
    elseif previous > 0 then
      ${out.reset} = ${window} - elapsed + lag
    end
  else
    -- The estimate only falls as time goes on: the first passing instant in this window, else in the next.
    local spare_now, retry = (${capacity} - current - ${cost}) * ${window}
    if spare_now >= 0 and previous > 0 and ${window} - math.floor(spare_now / previous) < ${window} then
      retry = ${window} - math.floor(spare_now / previous) - elapsed
    else
      local at_next = 0
      if current > 0 then at_next = math.max(0, ${window} - math.floor((${capacity} - ${cost}) * ${window} / current)) end
      retry = ${window} - elapsed + at_next
    end
    ${out.ok}, ${out.remaining}, ${out.reset}, ${out.wait} = false, math.max(0, math.floor((budget - used) / ${window})), 0, retry + lag
    if current > 0 then
      ${out.reset} = 2 * ${window} - elapsed + lag
    elseif previous > 0 then
      ${out.reset} = ${window} - elapsed + lag
    end
  end
end`;
  },
};
