import {
  FULL_FIGURES,
  figureLua,
  figuresFormatLua,
  OFFSET_FORMAT,
  SHORT_FIGURES,
  sendsAllFiguresLua,
} from '../figures.js';
import {
  asItStands,
  chargeWrite,
  decision,
  type FastAlgorithm,
  type FastShape,
  indented,
  keepsTtlWhen,
  packed,
  room,
  stateNumbers,
} from './fast-shape.js';
import { UNROLLED_POLICIES } from './fast-unrolled.js';
import { directoryOf, REPLY_NUMBERS, refusedWaitLua, STATE_BYTES, STATE_NUMBERS, wholeNumberLua } from './prelude.js';

const POLICIES = UNROLLED_POLICIES + 1;

/** Policy `i`'s figures, from the `policy` table, into the locals its decision reads. */
const figures = ({ readsLimit }: FastShape): string =>
  readsLimit
    ? 'local limit, window, max_delay, capacity = policy[p - 3], policy[p - 2], policy[p - 1], policy[p]'
    : 'local window, capacity = policy[p - 2], policy[p]';

/** Policy `i`'s state, from the decision's unpacked `numbers` (nil when fresh), into its locals. */
const state = (shape: FastShape): string => {
  const names = stateNumbers(shape);
  const stored = shape.keepsTtl ? ['stored'] : [];
  const read = [
    ...names.map((_, k) => `numbers[at + ${k + 1}]`),
    ...stored.map(() => `numbers[at + ${STATE_NUMBERS}]`),
  ];
  return `local ${[...names, ...stored].join(', ')}\nif numbers then ${[...names, ...stored].join(', ')} = ${read.join(', ')} end`;
};

/**
 * For an algorithm whose charge may keep the key's TTL (`FastShape.keepsTtl`): the latest reset
 * time the string held (nil for no string), found as its states are read, and whether the
 * charge keeps the TTL.
 */
const expiryStart = (shape: FastShape): string => (shape.keepsTtl ? ', expiry' : '');
const expiryCheck = (shape: FastShape): string =>
  shape.keepsTtl ? '\n      if stored and (expiry == nil or stored > expiry) then expiry = stored end' : '';
const keepsTtl = (shape: FastShape): string => (shape.keepsTtl ? `\n      local keeps_ttl = ${keepsTtlWhen}` : '');

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
export const fastManyLua = (algorithm: FastAlgorithm): string => {
  const { shape } = algorithm;
  return `
do
  -- Every growing table reallocates as it doubles, so the figures share one: per policy its
  -- limit, windowMs, maxDelayMs and capacity. A client's string of exactly these policies'
  -- states is their directory (byte 1, the heads in order, byte 0), then each state's
  -- ${STATE_NUMBERS} numbers, all read by one unpack and written by one pack.
  local policy, sent = ${room(4 * POLICIES)}, ${SHORT_FIGURES} * count
  if ${sendsAllFiguresLua('ARGV[3]', 'count')} then sent = ${FULL_FIGURES} * count end
  local figures = { struct.unpack(${figuresFormatLua('sent')} .. '${OFFSET_FORMAT}', ARGV[3]) }
  for i = 1, count do
    local p, w, l = 4 * i, 4 * i - 3, 4 * (count + i) - 3
    policy[p - 2], policy[p] = ${figureLua('figures[w]', 'figures[w + 1]')}, ${figureLua('figures[w + 2]', 'figures[w + 3]')}
    if sent == ${FULL_FIGURES} * count then
      policy[p - 3], policy[p - 1] = ${figureLua('figures[l]', 'figures[l + 1]')}, ${figureLua('figures[l + 2]', 'figures[l + 3]')}
    else
      -- The short entry: every limit is its capacity, every maxDelayMs 0.
      policy[p - 3], policy[p - 1] = policy[p], 0
    end
  end
  local directory = ${directoryOf(['ARGV[2]'])}${shape.keepsTtl ? '\n  local numbers_at = figures[2 * sent + 1]' : ''}
  local states_format, states_bytes = '<' .. string.rep('d', ${STATE_NUMBERS} * count), ${STATE_BYTES} * count
  local string_format = '<c0' .. string.sub(states_format, 2)

  -- Every client's string checked before the first decision writes: each client at most
  -- once, its string nothing but these policies' states.
  local texts, seen
  if decisions == 1 then
    -- A value of another type at the key (an error reply): no state, as MGET reads it.
    local text = redis.pcall('GET', KEYS[1])
    if text and text.err then text = false end
    texts = { text }
  else
    texts, seen = redis.call('MGET', unpack(KEYS, 1, decisions)), {}
  end
  for d = 1, decisions do
    local key, text = KEYS[d], texts[d]
    if seen then
      if seen[key] then return general() end
      seen[key] = true
    end
    if text and (find(text, directory, 1, true) ~= 1 or #text ~= #directory + states_bytes) then return general() end
  end

  -- The reply holds each policy's outcome as it is decided; the next states' numbers wait
  -- beside it, in the order the write packs them. A charge leaves each policy of these
  -- algorithms a reset above 0 (a gcra TAT ahead, a counter's unit in this window), so the
  -- string keeps every state. Both tables are made with room for one decision of the fewest
  -- policies this loop decides; more grow as usual.
  local reply, nexts, n = ${room(1 + REPLY_NUMBERS * POLICIES, 'redis_now')}, ${room(STATE_NUMBERS * POLICIES)}, 1
  for d = 1, decisions do
    local text, numbers, allowed, v, ttl${expiryStart(shape)} = texts[d], nil, true, 0, min_ttl
    if text then
      numbers = { struct.unpack(states_format, text, #directory + 1) }
      -- A damaged string (see wholeNumberLua): its client decides as fresh.
      for k = 1, ${STATE_NUMBERS} * count do
        local x = numbers[k]
        if not (${wholeNumberLua('x')}) then
          numbers = nil
          break
        end
      end
    end
    for i = 1, count do
      local p, at = 4 * i, ${STATE_NUMBERS} * (i - 1)
      ${indented(figures(shape), '      ')}
      ${indented(state(shape), '      ')}${expiryCheck(shape)}
      ${indented(decision(algorithm, ''), '      ')}
      if ok then
        reply[n + 1], reply[n + 2], reply[n + 3] = remaining, reset, wait
        local used = capacity - remaining
        if used < 1 then used = 1 end
        nexts[v + 1], nexts[v + 2], nexts[v + 3], nexts[v + 4], nexts[v + 5] = ${packed(shape, 'used', 'now + reset').join(', ')}
        v = v + ${STATE_NUMBERS}
        if reset > ttl then ttl = reset end
      else
        reply[n + 1], reply[n + 2], reply[n + 3] = remaining, reset, ${refusedWaitLua('wait')}
        allowed = false
      end
      n = n + ${REPLY_NUMBERS}
    end
    if allowed and cost > 0 then${keepsTtl(shape)}
      ${chargeWrite(
        shape,
        'KEYS[d]',
        { format: 'states_format', withDirectory: 'string_format', values: 'unpack(nexts, 1, v)' },
        '      ',
      )}
    elseif cost > 0 then
      -- Nothing was charged, so a policy that would have allowed reports its quota as it stands.
      for i = 1, count do
        local r, p, at = n - ${REPLY_NUMBERS} * (count - i + 1), 4 * i, ${STATE_NUMBERS} * (i - 1)
        -- Allowed: its signed wait is 0 or more.
        if reply[r + 3] >= 0 then
          ${indented(figures(shape), '          ')}
          ${indented(state(shape), '          ')}
          local remaining, reset, wait
          ${indented(asItStands(algorithm, ''), '          ')}
          reply[r + 1], reply[r + 2], reply[r + 3] = remaining, reset, wait
        end
      end
    end
  end
  return struct.pack('<' .. string.rep('d', n), unpack(reply))
end
`;
};
