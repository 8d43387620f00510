/** Mirrors core's `leakyBucket` line for line. */
export const leakyBucketLua = `
-- leaky-bucket: state { level = water in units (one request of cost 1 is windowMs units), at = last update (epoch ms) }.
-- The bucket drains limit units per ms; with a queue it may overflow by up to maxDelayMs of draining.
local leaky_bucket = {}
local function leaky_level(state, limit, now)
  if state == nil then return 0 end
  local level = state[1]
  local elapsed = now - state[2]
  if elapsed <= 0 then return level - elapsed * limit end
  if elapsed >= ceil_div(level, limit) then return 0 end
  return level - elapsed * limit
end
leaky_bucket.evaluate = function(state, p, capacity, cost, now)
  local window, limit = p.window, p.limit
  local level = leaky_level(state, limit, now)
  local after = level + cost * window
  local overflow = after - capacity * window
  if overflow <= p.max_delay * limit then
    return {
      allowed = true, remaining = max(0, floor_div(-overflow, window)), reset = ceil_div(after, limit),
      retry = 0, delay = overflow > 0 and ceil_div(overflow, limit) or 0,
      next = charged_state(state, after, cost * window, now),
    }
  end
  return {
    allowed = false, remaining = max(0, floor_div(capacity * window - level, window)),
    reset = ceil_div(level, limit), retry = ceil_div(overflow - p.max_delay * limit, limit), delay = 0,
  }
end
leaky_bucket.seed = function(used, p, now) return { used * p.window, now } end
leaky_bucket.refund = function(state, p, _, cost, now, charged_at, charged_by)
  return meter_refunded(state, p, cost, now, charged_at, charged_by)
end
ALGORITHMS['leaky-bucket'] = leaky_bucket
`;
