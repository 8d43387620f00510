import { MAX_EPOCH_MS } from '@sluice/core';

/**
 * Numbers a state takes in a client's string: its own three (a state of two writes 0 for the
 * third), its units spent and when it fully resets, each a little-endian double, so a read is
 * one `struct.unpack` and a write one `struct.pack` for every policy.
 */
export const STATE_NUMBERS = 5;

/** Bytes a state's numbers take. */
export const STATE_BYTES = 8 * STATE_NUMBERS;

/** The `struct` format of `count` states, packed one after another. */
export const statesFormat = (count: number): string => `<${'d'.repeat(STATE_NUMBERS * count)}`;

/**
 * The `struct` format of a client's whole string of `count` states: its directory (`c0` packs a
 * string whole), then the states.
 */
export const stringFormat = (count: number): string => `<c0${statesFormat(count).slice(1)}`;

/** The most keys one call carries: a batch of decisions is cut there. */
export const MAX_KEYS_PER_CALL = 32;

/**
 * Numbers a policy's outcome takes in the reply: remaining, resetAfterMs, and the wait signed
 * by the outcome, delayMs (0 or more) when allowed and -1 - retryAfterMs when refused. Every
 * wait is a whole number of 0 or more, so its sign says which it is: an allowed flag of its own
 * was a fourth number a policy that Redis set in a table, packed and sent for every decision (a
 * three-policy counter decision in a call of 32: 42.9k instructions with it, 41.0k without).
 */
export const REPLY_NUMBERS = 3;

/** A refused policy's wait in the reply (see `REPLY_NUMBERS`), from a Lua expression of its retryAfterMs. */
export const refusedWaitLua = (retry: string): string => `-1 - ${retry}`;

/** A policy's signed wait (see `REPLY_NUMBERS`) as a Lua expression, from Lua expressions of its outcome. */
export const signedWaitLua = (allowed: string, wait: string): string =>
  `${allowed} and ${wait} or ${refusedWaitLua(wait)}`;

/**
 * Whether `x`, a Lua expression of a number read from a client's string (or of a sum of such
 * numbers), is what sluice writes there: a whole number within 2^53 either way. Bytes written
 * into the key by anything else can unpack to NaN, an infinity, a fraction or a number too
 * large to reply with exactly; such a string is read as no state (fresh) and the next charge
 * overwrites it, so one damaged client neither fails every call it joins nor keeps failing
 * itself. Written inline: a Lua function would cost a call per number.
 */
export const wholeNumberLua = (x: string): string =>
  `${x} > -9007199254740992 and ${x} < 9007199254740992 and ${x} % 1 == 0`;

/**
 * Whether the numbers `names` read from a client's string are all sound (`wholeNumberLua`), with
 * their sum in the local `sum`. The sum is checked first (for a one-policy counter decision 0.6k
 * of Redis's instructions against 1.7k for each number): NaN, an infinity, a fraction or a
 * number past 2^53 in any of them leaves the sum so, unless another cancels it exactly, which
 * damaged bytes do not do by chance. Each number is checked only when the sum fails: a sound
 * state at the largest capacity × window a throttle gives (11 × 2^49) can sum past 2^53, and
 * read as damaged it gave its client a fresh quota.
 */
export const soundNumbersLua = (names: readonly string[]): string =>
  `(${wholeNumberLua('sum')}) or (${names.map((name) => `(${wholeNumberLua(name)})`).join(' and ')})`;

/**
 * The latest TAT a sound gcra write leaves: a time a limiter takes (at most `MAX_EPOCH_MS`,
 * 2^50) plus its tolerance at the largest overage a throttle gives (11 × 2^49: a capacity and
 * window of 2^49, soft or elastic at 1000 %) and its longest delay (under 2^31 ms): below
 * 7 × 2^50, where a wait from it still fits a reply (2^53). Written into the straight-line
 * paths as a literal: they see none of the general body's locals.
 */
export const MAX_GCRA_TAT_MS = 7 * MAX_EPOCH_MS;

/** The bytes a client's string opens and closes its directory with: no head holds either. */
export const DIRECTORY_START = 1;
export const DIRECTORY_END = 0;
export const DIRECTORY_MARKS = 2;

/**
 * A directory as a Lua expression, from Lua expressions of its heads in order: the start byte,
 * the heads, the end byte. The straight-line paths compare it whole against a client's string,
 * where finding each head would cost a search a policy.
 */
export const directoryOf = (heads: readonly string[]): string =>
  `'\\${DIRECTORY_START}' .. ${heads.join(' .. ')} .. '\\${DIRECTORY_END}'`;

/**
 * The contract every sluice script shares, and the helpers the algorithm sources use. Each
 * script is this prelude, one or more algorithm sources, then the decision body.
 */
export const preludeLua = `
-- sluice: a batch of rate-limit decisions, each for one client over every policy of a limiter,
-- each all or nothing, run in order as if each were its own call.
-- KEYS     per decision: the client's state key <prefix>{<namespace>|<client key>}, then one key
--          per sliding-window-log policy, in policy order; all keys of one call share a hash slot.
--          Keys after the last decision's repeat its last key (padding) and are never read.
-- ARGV     runs of decisions in a row that share their arguments, each run three entries (each
--          entry is a string Redis makes on every call, so there are three for any policy count):
--   header '<count> <op> <cost> <kinds>[ <now>][ <age>[ <span>]]' (the usual one is '1 consume 1 gcra')
--     count  how many decisions in a row the run holds
--     op     'consume': decide, and charge every policy only if all allow and cost > 0
--            'refund': give back to every policy that has state what a charge of cost made <age>
--                      ms before now still holds (never beyond a fresh state)
--            'all'    every decision of the call has this op: decide them all, then charge every
--                     one only if all allow (all or nothing over the call); each names its own
--                     client key
--     cost   units, an integer >= 0 (0 decides without charging)
--     kinds  per policy, 1 to 16 of them, joined by ',': the algorithm's name, e.g. 'gcra'; for a
--            token bucket refilled at intervals, 'token-bucket:<refillAmount (units)>:<refillIntervalMs>'
--            (without, continuous)
--     now    epoch ms; absent to read the Redis clock (TIME, once per call)
--     age    a refund's: how many ms before now its charge was made at the earliest (absent: 0);
--            with no now, after two spaces
--     span   how many ms after that at the latest (absent: 0): a log's entry of it is within
--   heads  per policy ' slot@version=': its state head in the client's string (version names the
--          algorithm and every figure its state depends on)
--   figures per policy its windowMs and effective capacity (units), then per policy its limit
--          (units) and maxDelayMs unless every limit is its capacity and every maxDelayMs 0
--          (the short entry), each figure two 7-byte little-endian numbers; last, where the
--          states' numbers start in a string of these policies' states, as decimal text after
--          a byte of its length (see figures.ts)
-- reply    one string of little-endian doubles, each an integer: the Redis clock's now (epoch ms)
--          if the call read it, else 0; then per decision, per policy: remaining (units),
--          resetAfterMs, and the wait signed by the outcome: delayMs (>= 0) if allowed,
--          -1 - retryAfterMs (< 0) if not
-- The client's state key holds one string: byte 1, then ' <slot>@<version>=' per policy slot with
-- state, whichever version of the limiter wrote it (the directory), byte 0, then per slot in the
-- directory's order five little-endian doubles: the state's numbers (a third of 0 for a state of
-- two; a log's are its total and 0: its list has a key of its own), <used>, <resetAt>. A string
-- in the text layout of earlier versions (' <slot>@<version>=<n>,<n>[,<n>];<used>,<resetAt>' per
-- slot) is read as well and written back in this one. The key has a TTL that lasts at least
-- until the latest <resetAt> among them (a charge resetting no later than that keeps the key's TTL;
-- see fast-shape.ts). <used> is the units spent and <resetAt> when the state fully resets: what
-- another version reads (SPEC 4). A state past its reset reads as fresh, so expiry never changes a
-- decision. With an injected now the TTL is at least 60 s: Redis cannot relate that clock to its own.
local ALGORITHMS = {}
local max, floor, ceil, fmod = math.max, math.floor, math.ceil, math.fmod
local function ceil_div(a, b) return ceil(a / b) end
local function floor_div(a, b) return floor(a / b) end
-- A bucket's state after a charge of added units: after, held as of now, as of now; or, where
-- the clock stands behind the state's time, its own work with the charge, as of that time, so
-- its time never goes back before the charges that wrote it (core's writeCharge says why).
local function charged_state(state, after, added, now)
  if state and state[2] > now then return { state[1] + added, state[2] } end
  return { after, now }
end
-- What a charge of units made at charged_at or later, by charged_by, still holds in a bucket
-- that drains or refills limit units a ms, its state written at since and read at at: a refund
-- gives back no more (core's stillHeld says why).
local function still_held(units, limit, since, at, charged_at, charged_by)
  if since <= charged_at then return units end
  if since <= charged_by then at = since end
  return max(0, units - (at - charged_at) * limit)
end
-- A continuous bucket's state after a refund: what the charge still holds taken off the state
-- as of its own time, which it leaves as it was (core's meterRefunded says why).
local function meter_refunded(state, p, cost, now, charged_at, charged_by)
  local since = state and state[2] or now
  local at = max(now, since)
  return { max(0, (state and state[1] or 0) - still_held(cost * p.window, p.limit, since, at, charged_at, charged_by)), since }
end
-- The latest time a limiter's clock takes (core's MAX_EPOCH_MS): a window a sound write left
-- starts no later, so none lies further ahead of now.
local MAX_EPOCH_MS = ${MAX_EPOCH_MS}
-- A window state (a fixed window's or a sliding counter's) as it reads, or nil when no sound
-- write could have left it: its window more than MAX_EPOCH_MS ahead of now, or a count below
-- 0. The string's numbers are checked as whole only, so such a state was written by something
-- else, and reads as fresh: its lag would put waits past 2^53, which no reply can carry (and
-- the reader refused the whole call), and a count below 0 would admit past the limit.
local function window_state(state, window, now)
  if state == nil or state[1] * window - now > MAX_EPOCH_MS or state[2] < 0 or (state[3] or 0) < 0 then
    return nil
  end
  return state
end
-- How far the clock stands behind the window a window state was written in (0 unless it
-- stepped back): the algorithm decides as of that window's start and adds the lag to its waits.
local function clock_lag(state, window, now)
  if state == nil then return 0 end
  return max(0, state[1] * window - now)
end
local function lagged(ms, lag)
  if ms > 0 then return ms + lag end
  return 0
end
`;
