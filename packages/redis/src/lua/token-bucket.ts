/** Mirrors core's `tokenBucket` line for line. */
export const tokenBucketLua = `
-- token-bucket: state { missing = tokens missing from a full bucket, at }. Tokens left = capacity - missing,
-- so a state means the same under any effective capacity.
-- Continuous refill (refillIntervalMs = 0): one token is windowMs units, limit units come back per ms,
-- at = last update (epoch ms). Interval refill: whole tokens, refillAmount every refillIntervalMs,
-- at = the last whole interval counted (epoch ms).
local token_bucket = {}
local function missing_at(state, limit, now)
  if state == nil then return 0 end
  local missing = state[1]
  local elapsed = now - state[2]
  if elapsed <= 0 then return missing - elapsed * limit end
  if elapsed >= ceil_div(missing, limit) then return 0 end
  return missing - elapsed * limit
end
local function stepped_missing_at(state, amount, interval, now)
  if state == nil then return 0, now end
  local refilled_at = state[2]
  local steps = max(0, floor_div(now - refilled_at, interval))
  local missing = state[1] - steps * amount
  if missing <= 0 then return 0, now end
  return missing, refilled_at + steps * interval
end
local function evaluate_stepped(state, p, capacity, cost, now)
  local amount, interval = p.refill_amount, p.refill_interval
  local missing, refilled_at = stepped_missing_at(state, amount, interval, now)
  local function until_full(gone)
    if gone <= 0 then return 0 end
    return refilled_at + ceil_div(gone, amount) * interval - now
  end
  local tokens = capacity - missing
  if tokens >= cost then
    return {
      allowed = true, remaining = tokens - cost, reset = until_full(missing + cost), retry = 0, delay = 0,
      next = { missing + cost, refilled_at },
    }
  end
  return {
    allowed = false, remaining = max(0, tokens), reset = until_full(missing),
    retry = refilled_at + ceil_div(cost - tokens, amount) * interval - now, delay = 0,
  }
end
token_bucket.evaluate = function(state, p, capacity, cost, now)
  if p.refill_interval > 0 then return evaluate_stepped(state, p, capacity, cost, now) end
  local window, limit = p.window, p.limit
  local missing = missing_at(state, limit, now)
  local need = cost * window
  local tokens = capacity * window - missing
  if tokens >= need then
    return {
      allowed = true, remaining = floor_div(tokens - need, window), reset = ceil_div(missing + need, limit),
      retry = 0, delay = 0, next = charged_state(state, missing + need, need, now),
    }
  end
  return {
    allowed = false, remaining = max(0, floor_div(tokens, window)), reset = ceil_div(missing, limit),
    retry = ceil_div(need - tokens, limit), delay = 0,
  }
end
token_bucket.seed = function(used, p, now)
  if p.refill_interval > 0 then return { used, now } end
  return { used * p.window, now }
end
-- What a charge still holds (core's comments).
token_bucket.refund = function(state, p, _, cost, now, charged_at, charged_by)
  if p.refill_interval > 0 then
    local missing, refilled_at = stepped_missing_at(state, p.refill_amount, p.refill_interval, now)
    -- A step after the charge's span, or within it one or the phase the charge began, unless
    -- the refund leaves the bucket full: nothing is given back (core's comments).
    if refilled_at > charged_by or (refilled_at >= charged_at and missing > cost) then
      return { missing, refilled_at }
    end
    return { max(0, missing - cost), refilled_at }
  end
  return meter_refunded(state, p, cost, now, charged_at, charged_by)
end
ALGORITHMS['token-bucket'] = token_bucket
`;
