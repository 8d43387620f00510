/** Mirrors core's `fixedWindow` line for line. */
export const fixedWindowLua = `
-- fixed-window: state { window = index of the aligned window floor(now / windowMs), count = units used in it }
local fixed_window = {}
fixed_window.evaluate = function(state, p, capacity, cost, at)
  state = window_state(state, p.window, at)
  local lag = clock_lag(state, p.window, at)
  local now = at + lag
  local index = floor(now / p.window)
  local count = 0
  if state ~= nil and state[1] == index then count = state[2] end
  local until_next_window = (index + 1) * p.window - now
  if count + cost <= capacity then
    local used = count + cost
    return {
      allowed = true, remaining = capacity - used, reset = used > 0 and until_next_window + lag or 0,
      retry = 0, delay = 0, next = { index, used },
    }
  end
  return {
    allowed = false, remaining = max(0, capacity - count), reset = count > 0 and until_next_window + lag or 0,
    retry = until_next_window + lag, delay = 0,
  }
end
-- The state of a client that has spent used units, taken over from another version of the policy.
fixed_window.seed = function(used, p, now) return { floor(now / p.window), used } end
-- Given back to the count of the charge's window while the state still counts it (core's comment).
fixed_window.refund = function(state, p, _, cost, _, charged_at)
  if state[1] ~= floor(charged_at / p.window) then return state end
  return { state[1], max(0, state[2] - cost) }
end
ALGORITHMS['fixed-window'] = fixed_window
`;
