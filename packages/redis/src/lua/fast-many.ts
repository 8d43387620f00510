import { chargeWrite, type FastShape, resetsNoLater } from './fast-shape.js';
import { UNROLLED_POLICIES } from './fast-unrolled.js';
import { directoryOf, STATE_BYTES, STATE_NUMBERS } from './prelude.js';

/**
 * A table constructor with room for `size` entries, the first given: Lua sizes a table by its
 * constructor, and each doubling after that reallocates it. Sized for one decision of the
 * fewest policies this loop decides; more grow as usual.
 */
const room = (size: number, first = 'nil') => `{ ${[first, ...Array<string>(size - 1).fill('nil')].join(', ')} }`;
const POLICIES = UNROLLED_POLICIES + 1;

/** A read state's own numbers (from `numbers`, all the client's, as unpacked) into its slots in `states`. */
const stateSlots = ({ size }: FastShape): string =>
  size === 3
    ? 'states[base + 3 * i - 2], states[base + 3 * i - 1], states[base + 3 * i] = numbers[at + 1], numbers[at + 2], numbers[at + 3]'
    : 'states[base + 3 * i - 2], states[base + 3 * i - 1] = numbers[at + 1], numbers[at + 2]';

/**
 * For an algorithm whose charge may keep the key's TTL (`FastShape.keepsTtl`): each policy's
 * stored reset time, kept as read, and the check that the charge resets each no later.
 */
const storedResets = (shape: FastShape): string =>
  shape.keepsTtl ? `\n  local stored_resets = ${room(POLICIES)}` : '';
const storedReset = (shape: FastShape): string =>
  shape.keepsTtl ? `\n        stored_resets[(d - 1) * count + i] = numbers[at + ${STATE_NUMBERS}]` : '';
const keepsTtlStart = (shape: FastShape): string => (shape.keepsTtl ? '\n    local keeps_ttl = min_ttl == 0' : '');
const keepsTtlCheck = (shape: FastShape): string =>
  shape.keepsTtl
    ? `
        if keeps_ttl then
          local stored = stored_resets[(d - 1) * count + i]
          keeps_ttl = ${resetsNoLater('stored', 'now + reset')}
        end`
    : '';

/**
 * The straight-line path for decisions of more policies than `fast-unrolled.ts` writes out,
 * all of the algorithm the script names, one decision or a batch: decisions that consume, all
 * with the same arguments, over distinct clients whose strings hold nothing or exactly this
 * version's states of these policies, in order. One read and one write per
 * client for the whole set, as the general body does, with the same rules: every policy is
 * charged only if all allow, a refused decision reports each policy that would have allowed as
 * it stands, and the string keeps each state with its units spent and when it fully resets.
 * Anything else (another version's state, a dropped policy's, some policies' states without
 * the others', a client twice) runs the general body, before this path has written anything.
 *
 * It is a block of the straight-line entry (`fast.ts`), which has read the call's cost, clock,
 * decision count and policy count: a function here would be built on every call.
 */
export const fastManyLua = (shape: FastShape): string => `
do
  -- Every growing table reallocates as it doubles, so the figures share one: per policy its
  -- head, limit, windowMs, maxDelayMs and capacity. A client's string of exactly these
  -- policies' states is their directory (byte 1, the heads in order, byte 0), then each
  -- state's ${STATE_NUMBERS} numbers, all read by one unpack and written by one pack.
  local policy, capacities_at, directory = ${room(5 * POLICIES)}, 1 + 5 * count, ''
  for i = 1, count do
    local at, p = 5 * i - 3, 5 * i
    if ARGV[at + 1] ~= FAST_NAME then return general() end
    policy[p - 4], policy[p - 3], policy[p - 2], policy[p - 1], policy[p] =
      ARGV[at], ARGV[at + 2] + 0, ARGV[at + 3] + 0, ARGV[at + 4] + 0, ARGV[capacities_at + i] + 0
    directory = directory .. ARGV[at]
  end
  directory = ${directoryOf(['directory'])}
  local states_format, states_bytes = '<' .. string.rep('d', ${STATE_NUMBERS} * count), ${STATE_BYTES} * count

  -- Every client's states, read and checked before the first decision writes: each client at
  -- most once, its string nothing but these policies' states.
  local texts
  if decisions == 1 then texts = { redis.call('GET', KEYS[1]) } else texts = redis.call('MGET', unpack(KEYS, 1, decisions)) end
  local states, seen, width = ${room(3 * POLICIES)}, nil, 3 * count${storedResets(shape)}
  if decisions > 1 then seen = {} end
  for d = 1, decisions do
    local key, text = KEYS[d], texts[d]
    if seen then
      if seen[key] then return general() end
      seen[key] = true
    end
    if text then
      if find(text, directory, 1, true) ~= 1 or #text ~= #directory + states_bytes then return general() end
      local base, numbers = (d - 1) * width, { struct.unpack(states_format, text, #directory + 1) }
      for i = 1, count do
        local at = ${STATE_NUMBERS} * (i - 1)
        ${stateSlots(shape)}${storedReset(shape)}
      end
    end
  end

  -- The reply holds each policy's outcome as it is decided; the next states' numbers wait
  -- beside it, in the order the write packs them. A charge leaves each policy of these
  -- algorithms a reset above 0 (a gcra TAT ahead, a counter's unit in this window), so the
  -- string keeps every state.
  local reply, nexts, n = ${room(1 + 4 * POLICIES, 'redis_now')}, ${room(5 * POLICIES)}, 1
  for d = 1, decisions do
    local base, allowed, v, ttl = (d - 1) * width, true, 0, min_ttl${keepsTtlStart(shape)}
    for i = 1, count do
      local p, at_state = 5 * i, base + 3 * i
      local ok, remaining, reset, wait, x, y, z = fast_evaluate(policy[p - 3], policy[p - 2], policy[p - 1], policy[p], cost, now,
        states[at_state - 2], states[at_state - 1], states[at_state])
      if ok then
        reply[n + 1], reply[n + 2], reply[n + 3], reply[n + 4] = 1, remaining, reset, wait
        local used = policy[p] - remaining
        if used < 1 then used = 1 end
        nexts[v + 1], nexts[v + 2], nexts[v + 3], nexts[v + 4], nexts[v + 5] = x, y, z or 0, used, now + reset
        v = v + ${STATE_NUMBERS}
        if reset > ttl then ttl = reset end${keepsTtlCheck(shape)}
      else
        reply[n + 1], reply[n + 2], reply[n + 3], reply[n + 4] = 0, remaining, reset, wait
        allowed = false
      end
      n = n + 4
    end
    if allowed and cost > 0 then
      ${chargeWrite(shape, 'KEYS[d]', 'directory .. struct.pack(states_format, unpack(nexts, 1, v))', '      ')}
    elseif cost > 0 then
      -- Nothing was charged, so a policy that would have allowed reports its quota as it stands.
      for i = 1, count do
        local r, p, at_state = n - 4 * (count - i + 1), 5 * i, base + 3 * i
        if reply[r + 1] == 1 then
          local _, remaining, reset = fast_evaluate(policy[p - 3], policy[p - 2], policy[p - 1], policy[p], 0, now,
            states[at_state - 2], states[at_state - 1], states[at_state])
          reply[r + 2], reply[r + 3], reply[r + 4] = remaining, reset, 0
        end
      end
    end
  end
  return struct.pack('<' .. string.rep('d', n), unpack(reply))
end
`;
