import type { FastAlgorithm } from './fast-shape.js';
import { MAX_GCRA_TAT_MS } from './prelude.js';

/** Mirrors core's `gcra` line for line. */
export const gcraLua = `
-- gcra: state { tat = theoretical arrival time (epoch ms), fraction = its part below 1 ms in units of 1/limit ms }.
-- In units of 1/limit ms a cost c moves the TAT by c * windowMs; the tolerance is capacity * windowMs.
local gcra = {}
-- The latest TAT a sound write leaves (MAX_GCRA_TAT_MS in prelude.ts).
local MAX_TAT = ${MAX_GCRA_TAT_MS}
local function gcra_ahead(state, limit, now)
  -- A TAT past MAX_TAT or a fraction outside [0, limit): written by something else (the string
  -- is checked for whole numbers only), read as fresh; its waits would pass 2^53.
  if state == nil or state[1] < now or state[1] > MAX_TAT or state[2] < 0 or state[2] >= limit then return 0 end
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
-- No more than a later charge would have left of this one, nor than the clock, stepped back
-- behind the last charge (ahead past the tolerance and the delay), has refilled since (core's comment).
gcra.refund = function(state, p, capacity, cost, now, charged_at)
  local ahead = gcra_ahead(state, p.limit, now)
  local behind = max(0, ahead - capacity * p.window - p.max_delay * p.limit)
  ahead = max(0, ahead - max(0, cost * p.window - ((now - charged_at) * p.limit + behind)))
  return { now + floor_div(ahead, p.limit), fmod(ahead, p.limit) }
end
ALGORITHMS['gcra'] = gcra
`;

/** The same decision for the straight-line path (`fast.ts`), inline: numbers in, numbers out, no tables. */
export const gcraFast: FastAlgorithm = {
  name: 'gcra',
  shape: { size: 2, keepsTtl: false, readsLimit: true },
  decide: ({ limit, window, maxDelay, capacity, cost, now, state: [tat, fraction] }, out) => {
    const [x, y] = out.next;
    return `do
  local ahead = 0
  -- A state no sound write leaves (see gcra_ahead) reads as fresh.
  if ${tat} ~= nil and ${tat} >= ${now} and ${tat} <= ${MAX_GCRA_TAT_MS} and ${fraction} >= 0 and ${fraction} < ${limit} then
    ahead = (${tat} - ${now}) * ${limit} + ${fraction}
  end
  local next_ahead = ahead + ${cost} * ${window}
  local late = next_ahead - ${capacity} * ${window}
  if late <= ${maxDelay} * ${limit} then
    -- The same whole numbers by % (Lua's x % y is x - floor(x / y) * y, inline), without a
    -- call of math's C functions each.
    local below = next_ahead % ${limit}
    local whole = (next_ahead - below) / ${limit}
    ${out.ok}, ${out.remaining}, ${out.reset}, ${out.wait}, ${x}, ${y} = true, 0, whole, 0, ${now} + whole, below
    if below > 0 then ${out.reset} = whole + 1 end
    if late > 0 then
      ${out.wait} = math.ceil(late / ${limit})
    elseif late < 0 then
      ${out.remaining} = (-late - -late % ${window}) / ${window}
    end
  else
    ${out.ok}, ${out.remaining} = false, math.max(0, math.floor((${capacity} * ${window} - ahead) / ${window}))
    ${out.reset}, ${out.wait} = math.ceil(ahead / ${limit}), math.ceil((late - ${maxDelay} * ${limit}) / ${limit})
  end
end`;
  },
};
